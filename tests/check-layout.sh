#!/bin/sh
# check-layout.sh [TREE] - the library's folders and the way calls go
# between them (README, "Layout").
#
# lib/ holds five folders and, beside them, only the version script, the
# valgrind suppressions and the ABI files.  lib/base includes nothing
# above it; lib/alloc, lib/sync, lib/queue and lib/mem include lib/base and
# not each other, except through an edge named in EDGES below.  A header of
# the same folder is included by its bare name ("sync.h"); one of another
# folder by its folder ("base/os.h"); nothing climbs out with "../".
# Inside lib/alloc, a file includes only the headers of its own layer and
# of those below it (ALLOC_RANKS), and only alloc_init.c writes the
# settings.
# When the objects of a build tree are at hand (top_builddir), the same
# rule is checked on calls: an object of one folder uses no jp__ function
# defined in another, except base's and those of an edge.
#
# Sizes: no source file under lib/ over 600 lines, none under tests/ over
# 800 (a file a reader can hold in mind; a longer one is split by concern).
#
# TREE (default $top_srcdir) is the source tree to check;
# tests/check-layout-test.sh runs this on a copy with a forbidden include
# and expects it to fail.
set -u
tree=${1:-${top_srcdir:-.}}
objs=${2:-${top_builddir:-}}
parts="base alloc sync queue mem"
# Named edges, "from:to" (none today; a new one is documented here and in
# the README's Layout section with the reason it exists).
EDGES=""
fail=0
say() { echo "FAIL: $*"; fail=1; }

allowed() { # from to
  [ "$1" = "$2" ] && return 0
  [ "$2" = base ] && [ "$1" != base ] && return 0
  for e in $EDGES; do [ "$e" = "$1:$2" ] && return 0; done
  return 1
}

# 1. What lies in lib/.
for f in "$tree"/lib/*; do
  b=${f##*/}
  case " $parts " in *" $b "*) [ -d "$f" ] && continue ;; esac
  case $b in
    libjpsync.map|jpsync.supp|libjpsync.abi.supp|abi) continue ;;
  esac
  # Build output of an in-tree build (make in the source folder).
  case $b in Makefile*|*.la|*.lo|*.o|.libs|.deps|.dirstamp|dummy.c) continue ;; esac
  say "lib/$b: lib/ holds the folders $parts, the version script, suppressions and abi/ only"
done

# 2. Includes: one grep over every file (a process per file is slow where
# fork is, and this runs in every make check), then the rule per line.
inc_list=${TMPDIR:-/tmp}/layout.$$
for p in $parts; do
  [ -d "$tree/lib/$p" ] || say "lib/$p is missing"
done
# "FILE:LINE:#include "X"" -> "FILE LINE X"
grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
    "$tree"/lib/*/*.c "$tree"/lib/*/*.h 2>/dev/null |
  sed 's/^\([^:]*\):\([0-9]*\):.*include[[:space:]]*"\([^"]*\)".*/\1 \2 \3/' > "$inc_list"
while read -r f line inc; do
  rel=lib/${f#"$tree"/lib/}
  p=${rel#lib/}; p=${p%%/*}
  case " $parts " in *" $p "*) ;; *) continue ;; esac
  case $inc in
    */*/*|../*|*/../*) say "$rel:$line: #include \"$inc\": name a folder's header as \"folder/file.h\"" ;;
    */*)
      q=${inc%%/*}
      case " $parts " in
        *" $q "*)
          if [ "$q" = "$p" ]; then
            say "$rel:$line: #include \"$inc\": a header of the same folder is included by its bare name"
          elif ! allowed "$p" "$q"; then
            say "$rel:$line: #include \"$inc\": lib/$p may not include lib/$q (base includes nothing above it; the parts include base and named edges only)"
          elif [ ! -e "$tree/lib/$inc" ]; then
            say "$rel:$line: #include \"$inc\": no such header"
          fi ;;
        *) say "$rel:$line: #include \"$inc\": not a folder of lib/" ;;
      esac ;;
    config.h) ;;
    *) [ -e "$tree/lib/$p/$inc" ] ||
         say "$rel:$line: #include \"$inc\": not in lib/$p (another folder's header is \"folder/$inc\")" ;;
  esac
done < "$inc_list"

# 2b. Inside lib/alloc, the layers (doc/layout.md, "Inside lib/alloc"): a
# file includes the headers of its own layer and of those below it.  Rank
# 0: what every layer may read (the settings, how a count is read
# without a lock); 1: where memory comes from and how it is cut (segments, the
# size classes, huge blocks, check mode's quarantine of them); 2: the
# shared per-class lists;
# 3: the thread caches and the heap profile they sample for; 4: check
# mode; 5: the leak report.  The API and start-up files sit on top and
# may include any; 6 is stats.h, theirs alone (the statistics read every
# layer, and no layer calls them).  A new header or file gets a rank here.
ALLOC_RANKS="alloc_init:0 sizeclass:1 counter:0 stats:6 segment:1 huge:1
  huge_cache:1 quarantine:1 central:2 shard:2 tcache:3 prof:3 prof_draw:3 check:4 check_fault:4
  leaks:5 leaks_report:5 leaks_stop:5"
ALLOC_TOP="alloc.c alloc_init.c alloc_fork.c alloc_stats.c stats_table.c"
# Named exceptions, "file:header" (none today: the size of a bin, which
# central.c and sizeclass.c need, is sizeclass.h's JP_BIN_BYTES).
ALLOC_EXCEPT=""
alloc_rank() { # name without .c/.h -> $rank, empty if it has none
  rank=
  for r in $ALLOC_RANKS; do [ "${r%%:*}" = "$1" ] && { rank=${r#*:}; return; }; done
}
if [ -d "$tree/lib/alloc" ]; then
  for f in "$tree"/lib/alloc/*.c "$tree"/lib/alloc/*.h; do
    [ -e "$f" ] || continue
    b=${f##*/}
    case " $ALLOC_TOP " in *" $b "*) continue ;; esac
    alloc_rank "${b%.[ch]}"; me=$rank
    [ -n "$me" ] || say "lib/alloc/$b: no layer for it in ALLOC_RANKS (tests/check-layout.sh)"
  done
  # The bare-name includes of lib/alloc, from the list of section 2.
  while read -r f line inc; do
    case $f in "$tree"/lib/alloc/*) ;; *) continue ;; esac
    case $inc in */*|config.h) continue ;; *.h) ;; *) continue ;; esac
    b=${f##*/}
    case " $ALLOC_TOP " in *" $b "*) continue ;; esac
    alloc_rank "${b%.[ch]}"; me=$rank
    [ -n "$me" ] || continue
    alloc_rank "${inc%.h}"; r=$rank
    if [ -z "$r" ]; then
      say "lib/alloc/$b: #include \"$inc\": no layer for it in ALLOC_RANKS"
    elif [ "$r" -gt "$me" ]; then
      case " $ALLOC_EXCEPT " in *" $b:$inc "*) continue ;; esac
      say "lib/alloc/$b: #include \"$inc\": a layer above it (rank $r over $me; doc/layout.md)"
    fi
  done < "$inc_list"
  # The settings fixed at start are written by alloc_init.c alone; the
  # others read them through the const view jp__settings (alloc_init.h).
  for f in $(grep -l 'jp__settings_w' "$tree"/lib/*/*.c 2>/dev/null); do
    case $f in */lib/alloc/alloc_init.c) ;;
      *) say "${f#"$tree"/}: names jp__settings_w, which only alloc_init.c writes (read jp__settings)" ;;
    esac
  done
fi

# 3. Calls, from the objects of a build tree (skipped without one, or
# without nm: the include rule above still ran).
if [ -n "$objs" ] && command -v nm >/dev/null 2>&1 &&
   ls "$objs"/lib/base/.libs/*.o >/dev/null 2>&1; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  for p in $parts; do
    ls "$objs"/lib/$p/.libs/*.o >/dev/null 2>&1 || continue
    # One nm a folder: "OBJ.o:ADDR T SYM" (defined), "OBJ.o:   U SYM" (used).
    nm -A "$objs"/lib/$p/.libs/*.o |
      awk -v p="$p" -v def="$tmp/def" -v use="$tmp/use" '
        { i = index($0, ".o:"); if (i == 0) next
          o = substr($0, 1, i + 1); sub(/.*\//, "", o)
          n = split(substr($0, i + 3), f, " ") }
        n == 3 && f[2] ~ /^[TDBR]$/ && f[3] ~ /^jp__/ { print f[3], p >> def }
        n == 2 && f[1] == "U" && f[2] ~ /^jp__/ { print f[2], p, o >> use }'
  done
  touch "$tmp/def" "$tmp/use"
  sort -u -o "$tmp/def" "$tmp/def"
  # "SYM USER OBJ" joined with "SYM DEFINER" in one pass.
  awk 'NR == FNR { if (!($1 in def)) def[$1] = $2; next }
       ($1 in def) { print $1, $2, $3, def[$1] }' "$tmp/def" "$tmp/use" > "$tmp/join"
  while read -r sym p o q; do
    allowed "$p" "$q" || say "lib/$p/$o calls $sym of lib/$q"
  done < "$tmp/join"
  echo "ok: calls checked on the objects of $objs"
else
  echo "note: no objects under ${objs:-(none)}/lib/base/.libs: calls not checked"
fi

# 4. Sizes.
for top in lib:600 tests:800; do
  d=${top%%:*} max=${top#*:}
  [ -d "$tree/$d" ] || continue
  # One wc over all the files ("N FILE" lines, and "N total" lines).
  find "$tree/$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.hpp' \) \
      -exec wc -l {} + |
    awk -v max="$max" -v d="$d" -v pre="$tree/" '
      NF == 2 && $2 != "total" && $1 > max + 0 {
        f = $2; if (index(f, pre) == 1) f = substr(f, length(pre) + 1)
        print "FAIL: " f ": " $1 " lines, over the " max " a source file under " d "/ may have"
      }' > "${TMPDIR:-/tmp}/layout-size.$$"
  if [ -s "${TMPDIR:-/tmp}/layout-size.$$" ]; then cat "${TMPDIR:-/tmp}/layout-size.$$"; fail=1; fi
  rm -f "${TMPDIR:-/tmp}/layout-size.$$"
done

rm -f "$inc_list"
[ $fail -eq 0 ] && echo "ok: lib/ holds $parts, each includes only what the layout allows, and no file is over its size"
exit $fail
