#!/bin/sh
# jpsync-run --stats-format=json and --stats=FILE over several processes:
#   - the JSON object of a program (tests/shim/stats-prog, which allocates a
#     known block and prints its pid) parses (python3's json) and holds its
#     pid, name and figures; a hostile program name (quote, backslash,
#     newline, invalid UTF-8) still gives valid JSON;
#   - a shell running three programs under jpsync-run --stats=FILE: three
#     tables, then one summary line per process with its pid and a total
#     equal to their sum (text), or one "type": "summary" object (JSON);
#   - PROGRAM's exit status, and its death by a signal, come back from
#     jpsync-run, and a signal sent to jpsync-run reaches PROGRAM.
# The JSON of one program runs under emulation too (python3 reads the file
# on the build machine); the rest needs jpsync-run to start the build
# machine's sh, so not in a cross build.
set -u
. "${top_srcdir:-.}/tests/shim/preload-common.sh"
skip_if_no_preload
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 to parse the JSON"; exit 77; }
make_tmp
status=0
bad() { echo "FAIL: $*"; status=1; }
prog="$top_builddir/tests/shim/stats-prog"
[ -x "$prog" ] || fail "$prog not built"
t="timeout -k 5 120"
big=24000000

# check_json FILE PID NAME: every line of FILE is a JSON object with
# "schema": 1 first; the "stats" object is PID's, of program NAME, and its
# figures are those of stats-prog BIG.
check_json() {
  python3 - "$@" "$big" <<'PY'
import json, sys
path, pid, name, big = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
raw = open(path, 'rb').read()
text = raw.decode('utf-8')          # strict: any byte >= 0x80 is valid UTF-8
lines = text.split('\n')
assert lines[-1] == '', 'no newline at the end'
objs = [json.loads(l) for l in lines[:-1]]
for o in objs:
    assert list(o)[0] == 'schema' and o['schema'] == 1, o
st = [o for o in objs if o['type'] == 'stats']
assert len(st) == 1, '%d stats objects' % len(st)
s = st[0]
want = name.encode('utf-8', 'surrogateescape').decode('utf-8', 'replace')
assert s['program'] == want, (s['program'], want)
assert s['pid'] == pid, (s['pid'], pid)
assert big <= s['peak_in_use'] <= big + (8 << 20), s['peak_in_use']
assert s['peak_rss'] >= big, s['peak_rss']
assert s['huge_bytes'] == 0 and s['huge_blocks'] == 0, s
assert s['allocations'] >= 1 and s['frees'] >= 1, s
assert s['peak_mapped'] >= big and s['elapsed_ns'] > 0, s
for k in ('elapsed_ns', 'user_ns', 'system_ns', 'minor_faults', 'major_faults',
          'in_use', 'mapped', 'cached', 'in_transit', 'span_free', 'orphaned',
          'given_back', 'decommitted', 'decommits',
          'threads', 'cache_hits', 'cache_misses'):
    assert isinstance(s[k], int) and s[k] >= 0, k
assert sum(c['allocations'] for c in s['classes']) <= s['allocations']
for c in s['classes']:
    assert set(c) == {'class', 'block_size', 'allocations', 'frees', 'misses'}, c
PY
}

# 1. One program, JSON.
$t $run_module --stats="$tmp/one.json" --stats-format=json "$prog" $big > "$tmp/out" ||
  bad "stats-prog under --stats-format=json failed"
pid=$(sed -n 's/^pid=//p' "$tmp/out")
check_json "$tmp/one.json" "$pid" stats-prog || { bad "the JSON of stats-prog:"; cat "$tmp/one.json"; }
# 2. A hostile name: a quote, a backslash, a newline, a byte that is not
# UTF-8 and one that is (U+00E9).
name=$(printf 'q"b\\s\nl\377\303\251x')
cp "$prog" "$tmp/$name" || fail "cp to a hostile name"
$t $run_module --stats="$tmp/name.json" --stats-format=json "$tmp/$name" $big > "$tmp/out" ||
  bad "a hostile program name failed"
pid=$(sed -n 's/^pid=//p' "$tmp/out")
check_json "$tmp/name.json" "$pid" "$name" || { bad "the JSON of a hostile name:"; cat -v "$tmp/name.json"; }

if foreign; then
  echo "SKIP (rest): several processes under jpsync-run: $foreign_why"
  exit $status
fi

# 3. Three programs from a shell, one file: three tables, three summary
# lines with their pids, a total that is their sum.
$t "$run" --stats="$tmp/three.txt" sh -c \
  '"$0" 100000 && "$0" 200000 && "$0" 300000' "$prog" > "$tmp/pids" ||
  bad "three programs under --stats=FILE failed"
python3 - "$tmp/three.txt" "$tmp/pids" <<'PY' || { bad "the summary of three programs:"; cat "$tmp/three.txt"; }
import re, sys
text = open(sys.argv[1]).read()
pids = [int(l[4:]) for l in open(sys.argv[2]) if l.startswith('pid=')]
assert len(pids) == 3, pids
tables = re.findall(r'^jpsync allocator statistics \(pid (\d+)\)', text, re.M)
assert sorted(map(int, tables)) == sorted(pids), (tables, pids)
lines = text.rstrip('\n').split('\n')
summ = [l for l in lines if l.startswith('jpsync summary: ')]
assert lines[-4:] == summ, 'the summary is not at the end'
rx = (r'jpsync summary: pid (\d+): (\d+) allocations, peak in use (\d+) bytes, '
      r'peak RSS (\d+) bytes, elapsed \d+\.\d{3} s, program stats-prog$')
per = [re.match(rx, l) for l in summ[:3]]
assert all(per), summ
assert sorted(int(m.group(1)) for m in per) == sorted(pids)
for m in per:
    i = pids.index(int(m.group(1)))
    assert int(m.group(3)) >= (i + 1) * 100000, m.group(0)
tot = re.match(r'jpsync summary: total of 3 processes: (\d+) allocations, peak in use '
               r'(\d+) bytes, peak RSS (\d+) bytes \(sums\), elapsed \d+\.\d{3} s$', summ[3])
assert tot, summ[3]
for g in (1, 2, 3):
    assert int(tot.group(g)) == sum(int(m.group(g + 1)) for m in per), (g, summ)
PY
# The same in JSON: the last object is the summary.
$t "$run" --stats="$tmp/three.json" --stats-format=json sh -c \
  '"$0" 100000 && "$0" 200000 && "$0" 300000' "$prog" > "$tmp/pids" ||
  bad "three programs under --stats-format=json failed"
python3 - "$tmp/three.json" "$tmp/pids" <<'PY' || { bad "the JSON summary of three programs:"; cat "$tmp/three.json"; }
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
pids = [int(l[4:]) for l in open(sys.argv[2]) if l.startswith('pid=')]
assert [o['type'] for o in objs] == ['stats'] * 3 + ['summary'], objs
s = objs[-1]
assert list(s)[0] == 'schema' and s['schema'] == 1
assert sorted(p['pid'] for p in s['processes']) == sorted(pids)
assert sorted(o['pid'] for o in objs[:3]) == sorted(pids)
for p in s['processes']:
    o = [x for x in objs[:3] if x['pid'] == p['pid']][0]
    for k in ('allocations', 'peak_in_use', 'peak_rss', 'elapsed_ns'):
        assert p[k] == o[k], (k, p, o)
    assert p['program'] == 'stats-prog'
assert s['total']['processes'] == 3
for k in ('allocations', 'peak_in_use', 'peak_rss'):
    assert s['total'][k] == sum(p[k] for p in s['processes']), k
PY

# 4. Exit status and signal death pass through; a signal sent to
# jpsync-run reaches PROGRAM.
$t "$run" --stats="$tmp/st.txt" "$prog" 1000 exit 7 > /dev/null; rc=$?
[ $rc -eq 7 ] || bad "exit 7 came back from --stats=FILE as $rc"
sh -c '"$0" 1000 kill 15' "$prog" > /dev/null; want=$?
$t "$run" --stats="$tmp/st.txt" "$prog" 1000 kill 15 > /dev/null; rc=$?
[ $rc -eq $want ] && [ $rc -ne 0 ] || bad "a SIGTERM death came back from --stats=FILE as $rc, not $want"
tail -n 1 "$tmp/st.txt" | grep -q '^jpsync summary: total of 0 processes' ||
  bad "no summary after a SIGTERM death: $(tail -n 1 "$tmp/st.txt")"
# The statistics signal sent to jpsync-run reaches PROGRAM once: one table
# (the summary counts the process by it), then SIGTERM ends both.
# Its output goes to a file made empty here, not by the background job:
# the loop below would otherwise find an earlier run's pid= line before
# the job's redirection truncated it, and signal jpsync-run before it
# started PROGRAM (CI's distcheck saw status 138, SIGUSR1's death).
: > "$tmp/pause.out"
"$run" --stats="$tmp/sig.txt" --stats-signal=USR1 "$prog" 1000 pause >> "$tmp/pause.out" & rp=$!
i=0; while ! grep -q '^pid=' "$tmp/pause.out" && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
kill -USR1 $rp
i=0; while ! grep -q '^jpsync allocator statistics' "$tmp/sig.txt" && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.2
kill -TERM $rp; wait $rp; rc=$?
[ $rc -eq $want ] || bad "SIGTERM sent to jpsync-run: status $rc, not $want"
n=$(grep -c '^jpsync allocator statistics' "$tmp/sig.txt")
[ "$n" -eq 1 ] || bad "SIGUSR1 sent to jpsync-run --stats-signal=USR1: $n tables, not 1"
pid=$(sed -n 's/^pid=//p' "$tmp/pause.out")
grep -q "^jpsync summary: pid $pid: " "$tmp/sig.txt" &&
  grep -q '^jpsync summary: total of 1 process: ' "$tmp/sig.txt" ||
  { bad "SIGTERM sent to jpsync-run: no summary of $pid:"; cat "$tmp/sig.txt"; }
echo "ok: JSON statistics, a hostile name, the summary of three programs, statuses"
exit $status
