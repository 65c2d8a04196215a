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

# 2. Includes.
for p in $parts; do
  [ -d "$tree/lib/$p" ] || { say "lib/$p is missing"; continue; }
  for f in "$tree"/lib/$p/*.c "$tree"/lib/$p/*.h; do
    [ -e "$f" ] || continue
    rel=lib/$p/${f##*/}
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
      sed 's/^\([0-9]*\):.*include[[:space:]]*"\([^"]*\)".*/\1 \2/' > "${TMPDIR:-/tmp}/layout.$$"
    while read -r line inc; do
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
    done < "${TMPDIR:-/tmp}/layout.$$"
    rm -f "${TMPDIR:-/tmp}/layout.$$"
  done
done

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
  huge_cache:1 quarantine:1 central:2 tcache:3 prof:3 prof_draw:3 check:4 check_fault:4
  leaks:5 leaks_stop:5"
ALLOC_TOP="alloc.c alloc_init.c alloc_fork.c alloc_stats.c stats_table.c"
# Named exceptions, "file:header" (none today: the size of a bin, which
# central.c and sizeclass.c need, is sizeclass.h's JP_BIN_BYTES).
ALLOC_EXCEPT=""
alloc_rank() { # name without .c/.h -> rank, or nothing
  for r in $ALLOC_RANKS; do [ "${r%%:*}" = "$1" ] && { echo "${r#*:}"; return; }; done
}
if [ -d "$tree/lib/alloc" ]; then
  for f in "$tree"/lib/alloc/*.c "$tree"/lib/alloc/*.h; do
    [ -e "$f" ] || continue
    b=${f##*/}
    case " $ALLOC_TOP " in *" $b "*) continue ;; esac
    me=$(alloc_rank "${b%.[ch]}")
    [ -n "$me" ] || { say "lib/alloc/$b: no layer for it in ALLOC_RANKS (tests/check-layout.sh)"; continue; }
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"/]*\.h\)".*/\1/p' "$f"); do
      [ "$inc" = config.h ] && continue
      r=$(alloc_rank "${inc%.h}")
      if [ -z "$r" ]; then
        say "lib/alloc/$b: #include \"$inc\": no layer for it in ALLOC_RANKS"
      elif [ "$r" -gt "$me" ]; then
        case " $ALLOC_EXCEPT " in *" $b:$inc "*) continue ;; esac
        say "lib/alloc/$b: #include \"$inc\": a layer above it (rank $r over $me; doc/layout.md)"
      fi
    done
  done
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
    for o in "$objs"/lib/$p/.libs/*.o; do
      [ -e "$o" ] || continue
      nm "$o" | awk -v p="$p" '$2 ~ /^[TDBR]$/ && $3 ~ /^jp__/ {print $3, p}' >> "$tmp/def"
      nm -u "$o" | awk -v p="$p" -v o="${o##*/}" '$2 ~ /^jp__/ {print $2, p, o}' >> "$tmp/use"
    done
  done
  sort -u -o "$tmp/def" "$tmp/def"
  while read -r sym p o; do
    q=$(awk -v s="$sym" '$1 == s {print $2; exit}' "$tmp/def")
    [ -n "$q" ] || continue
    allowed "$p" "$q" || say "lib/$p/$o calls $sym of lib/$q"
  done < "$tmp/use"
  echo "ok: calls checked on the objects of $objs"
else
  echo "note: no objects under ${objs:-(none)}/lib/base/.libs: calls not checked"
fi

# 4. Sizes.
for top in lib:600 tests:800; do
  d=${top%%:*} max=${top#*:}
  [ -d "$tree/$d" ] || continue
  find "$tree/$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.hpp' \) |
    while read -r f; do
      n=$(wc -l < "$f")
      [ "$n" -le "$max" ] || echo "FAIL: ${f#"$tree"/}: $n lines, over the $max a source file under $d/ may have"
    done > "${TMPDIR:-/tmp}/layout-size.$$"
  if [ -s "${TMPDIR:-/tmp}/layout-size.$$" ]; then cat "${TMPDIR:-/tmp}/layout-size.$$"; fail=1; fi
  rm -f "${TMPDIR:-/tmp}/layout-size.$$"
done

[ $fail -eq 0 ] && echo "ok: lib/ holds $parts, each includes only what the layout allows, and no file is over its size"
exit $fail
