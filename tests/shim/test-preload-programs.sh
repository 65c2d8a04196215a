#!/bin/sh
# Real, unmodified programs under ./shim/jpsync-run give the same output and
# exit status as without it: Python (a large dict sorted, sqlite3, json),
# Perl (a large hash), sort of a 20 MB file, gcc compiling a C file and
# (-O2) a generated one of 140 KB, git on a repository made here (init,
# add, commit, log, gc), xz -T2 round trip (of 8 MB: the input of sort cut
# down, xz being the slowest of them).  Each runs a third time under
# jpsync-run --check: check mode must never report a correct program.
# Each run has a timeout.  A program that is not installed, or that fails
# even without the module, is reported and left out; if none runs, the test
# is skipped.
set -u
. "${top_srcdir:-.}/tests/shim/preload-common.sh"
skip_if_no_preload
if foreign; then echo "SKIP: $foreign_why"; exit 77; fi
make_tmp
limit=${JPSYNC_PRELOAD_TIMEOUT:-300}
status=0 ran=0

# compare NAME DIR COMMAND...: run COMMAND in DIR/work (a fresh copy of
# DIR/in each time, under the same name, since compilers record it), once
# without and once with the module, and compare stdout, stderr and the exit
# status.
compare() {
  name=$1 dir=$2; shift 2
  start=$(date +%s)
  for mode in plain jpsync check; do
    rm -rf "$dir/work"; cp -R "$dir/in" "$dir/work"
    case $mode in
    plain) (cd "$dir/work" && timeout -k 5 "$limit" "$@" > ../$mode.out 2> ../$mode.err) ;;
    jpsync) (cd "$dir/work" && timeout -k 5 "$limit" "$run" "$@" > ../$mode.out 2> ../$mode.err) ;;
    check) (cd "$dir/work" && timeout -k 5 "$limit" "$run" --check "$@" > ../$mode.out 2> ../$mode.err) ;;
    esac
    echo $? > "$dir/$mode.rc"
  done
  secs=$(( $(date +%s) - start ))
  if [ "$(cat "$dir/plain.rc")" != 0 ]; then
    # Not our failure: the program (or a module it needs, such as Python's
    # sqlite3) does not work here even without jpsync-run.
    echo "note: $name fails without the module (exit $(cat "$dir/plain.rc")), left out:"
    head -n 5 "$dir/plain.err"; return 0
  fi
  ran=$((ran + 1))
  for mode in jpsync check; do
    how="under jpsync-run"; [ $mode = check ] && how="under jpsync-run --check"
    if ! cmp -s "$dir/plain.rc" "$dir/$mode.rc"; then
      echo "FAIL: $name: exit status $(cat "$dir/$mode.rc") $how, 0 without"
      head -n 20 "$dir/$mode.err"; status=1; return 1
    fi
    for f in out err; do
      if ! cmp -s "$dir/plain.$f" "$dir/$mode.$f"; then
        echo "FAIL: $name: std$f differs $how:"
        diff "$dir/plain.$f" "$dir/$mode.$f" | head -n 20; status=1; return 1
      fi
    done
  done
  echo "ok: $name: same output ($(wc -c < "$dir/plain.out") bytes) and exit status, also with --check (${secs}s for the three)"
  return 0
}

have() {
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "note: $1 not installed, left out"; return 1
}

# The deterministic input: 20 MB of lines (pseudo-random keys, in order of
# generation), made with awk so that no allocator is involved.
mkdir -p "$tmp/data"
awk 'BEGIN { srand(7); for (i = 0; i < 900000; i++)
       printf "%08x %06d %s\n", int(rand() * 4294967296), i, substr("abcdefghijklmnopqrstuvwxyz", 1 + i % 26) }' \
  > "$tmp/data/lines.txt"
size=$(wc -c < "$tmp/data/lines.txt")
[ "$size" -gt 20000000 ] || fail "generated input is $size bytes, expected > 20 MB"

# --- Python: a large dict, sorted; sqlite3; json ---------------------------
# The interpreter itself, not a wrapper script in PATH (pyenv's), so that
# the module runs in Python and the comparison is of Python's output.
if have python3; then
  py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
  mkdir -p "$tmp/py/in"
  cat > "$tmp/py/in/prog.py" <<'PY'
import hashlib, json, sqlite3
d = {"k%07d" % ((i * 7919) % 150000): [i, str(i) * 3, {"n": i}] for i in range(150000)}
keys = sorted(d, key=lambda k: (d[k][0] % 1000, k))
h = hashlib.sha256("".join(keys[:5000]).encode()).hexdigest()
print(len(d), keys[0], keys[-1], h)
db = sqlite3.connect(":memory:")
db.execute("create table t (k text primary key, v integer, s text)")
db.executemany("insert into t values (?, ?, ?)", ((k, v[0], v[1]) for k, v in d.items()))
db.execute("create index t_v on t (v)")
print(db.execute("select count(*), sum(v), max(length(s)) from t").fetchone())
print(db.execute("select k from t where v between 1000 and 1003 order by v").fetchall())
blob = json.dumps(d, sort_keys=True)
back = json.loads(blob)
print(len(blob), back == d, hashlib.sha256(blob.encode()).hexdigest())
PY
  compare python "$tmp/py" env PYTHONHASHSEED=0 "$py" prog.py
fi

# --- Perl: a one-liner over a large hash -------------------------------------
if have perl; then
  mkdir -p "$tmp/perl/in"
  compare perl "$tmp/perl" env PERL_HASH_SEED=0 perl -e '
    my %h; $h{"key$_"} = [$_, "v" x ($_ % 50)] for 1 .. 200000;
    my $s = 0; $s += $h{$_}[0] for keys %h;
    delete $h{"key$_"} for grep { $_ % 3 == 0 } 1 .. 200000;
    my @k = sort keys %h;
    print scalar(keys %h), " $s $k[0] $k[-1]\n";'
fi

# --- sort: 20 MB -------------------------------------------------------------
if have sort; then
  mkdir -p "$tmp/sort/in"
  ln -s "$tmp/data/lines.txt" "$tmp/sort/in/lines.txt"
  compare sort "$tmp/sort" env LC_ALL=C sort -S 64M lines.txt
fi

# --- gcc: compile a C file, compare the object and the program's output ----
if have gcc; then
  mkdir -p "$tmp/gcc/in"
  cat > "$tmp/gcc/in/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct node { struct node *left, *right; int key; };
static struct node *insert(struct node *t, int key)
{
	if (t == NULL) {
		t = calloc(1, sizeof *t);
		t->key = key;
	} else if (key < t->key) {
		t->left = insert(t->left, key);
	} else {
		t->right = insert(t->right, key);
	}
	return t;
}
static long walk(const struct node *t, long depth)
{
	return t == NULL ? 0 : depth + walk(t->left, depth + 1) + walk(t->right, depth + 1);
}
int main(void)
{
	struct node *t = NULL;
	unsigned x = 12345;
	for (int i = 0; i < 100000; i++) {
		x = x * 1103515245u + 12345u;
		t = insert(t, (int)(x >> 8));
	}
	printf("%ld\n", walk(t, 0));
	return 0;
}
C
  compare gcc "$tmp/gcc" sh -c 'gcc -O2 -g -frandom-seed=1 -c prog.c -o prog.o &&
    gcc -o prog prog.o && ./prog && od -An -tx1 prog.o | cksum'
fi

# gcc -O2 on a generated file of 140 KB (1000 functions and a main that
# calls them all): its alias pass freed an aligned block that check mode
# then took for a freed checked one ("write after free", a false alarm
# of jpsync 1.1 before its fix).
if have gcc; then
  mkdir -p "$tmp/gccbig/in"
  awk 'BEGIN { n = 1000; print "#include <stdio.h>"
    for (i = 0; i < n; i++) { m = 8 + i % 50
      printf "static int f%d(int x){ int a[%d]; for(int i=0;i<%d;i++) a[i]=x*i+%d; int s=0; for(int i=0;i<%d;i++) s+=a[i]^(i*%d); return s; }\n", i, m, m, i, m, i % 97 }
    print "int main(void){ long t=0;"
    for (i = 0; i < n; i++) printf " t+=f%d(%d);\n", i, i % 13
    print " printf(\"%ld\\n\", t); return 0; }" }' > "$tmp/gccbig/in/big.c"
  compare gcc-O2-140K "$tmp/gccbig" sh -c 'gcc -O2 -frandom-seed=1 -c big.c -o big.o &&
    gcc -o big big.o && ./big && od -An -tx1 big.o | cksum'
fi

# --- git: a repository made here -----------------------------------------
if have git; then
  mkdir -p "$tmp/git/in/home"
  i=0
  while [ $i -lt 40 ]; do
    printf 'file %d\n%s\n' $i "$(seq $i $((i + 200)))" > "$tmp/git/in/f$i.txt"; i=$((i + 1))
  done
  compare git "$tmp/git" env HOME="$tmp/git/in/home" GIT_CONFIG_NOSYSTEM=1 \
    GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' \
    GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' \
    sh -c 'set -e
      git init -q -b main repo && cd repo
      for n in 1 2 3 4 5; do
        cp ../f*.txt . && echo "round $n" >> f$n.txt
        git add -A && git commit -q -m "commit $n"
      done
      git log --format="%H %s"
      git gc -q --aggressive
      git count-objects -v | grep -E "^(count|in-pack|packs)"
      git fsck --no-progress 2>&1
      git rev-parse HEAD^{tree}'
fi

# --- xz -T2: round trip ------------------------------------------------------
if have xz; then
  # 8 MB: at -1 xz -T2 cuts 3 MiB blocks, so both threads work.
  mkdir -p "$tmp/xz/in"
  head -c 8000000 "$tmp/data/lines.txt" > "$tmp/xz/in/lines.txt"
  compare xz "$tmp/xz" sh -c 'xz -T2 -1 -c lines.txt > lines.xz &&
    xz -T2 -d -c lines.xz | cmp - lines.txt && cksum < lines.xz'
fi

[ $ran -gt 0 ] || { echo "SKIP: none of the programs is installed"; exit 77; }
exit $status
