#!/bin/sh
# check-layout-test.sh - tests/check-layout.sh fails where it should: on a
# copy of lib/ it passes, then fails on each forbidden edit (base including
# a part, one part including another, a climb with "../", an allocator
# file including a layer above it, a write to the allocator's settings
# outside alloc_init.c, a stray file in lib/, a file over 600 lines), and
# passes again once the edit is undone.
set -u
: "${top_srcdir:=.}"
chk="$top_srcdir/tests/check-layout.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
cp -R "$top_srcdir/lib" "$tmp/lib"
run() { sh "$chk" "$tmp" "" > "$tmp/out" 2>&1; }
if ! run; then echo "FAIL: the copy of lib/ does not pass:"; cat "$tmp/out"; exit 1; fi
echo "ok: a clean copy passes"
try() { # description file line
  cp "$tmp/lib/$2" "$tmp/saved"
  printf '%s\n' "$3" >> "$tmp/lib/$2"
  if run; then echo "FAIL: $1 passed the check"; fail=1
  elif ! grep -q "^FAIL: lib/$2" "$tmp/out"; then
    echo "FAIL: $1 failed without naming lib/$2:"; cat "$tmp/out"; fail=1
  else echo "ok: $1 is refused: $(grep '^FAIL' "$tmp/out" | head -n1)"; fi
  cp "$tmp/saved" "$tmp/lib/$2"
}
try "base including sync" base/os.c '#include "sync/sync.h"'
try "alloc including queue" alloc/huge.c '#include "queue/queue_internal.h"'
try "mem including a header of sync by its bare name" mem/pool.c '#include "sync.h"'
try "a climb out of the folder" queue/spsc.c '#include "../base/os.h"'
try "an allocator layer including one above it" alloc/segment.c '#include "tcache.h"'
try "the shared lists including the thread caches" alloc/central.c '#include "tcache.h"'
try "a write to the settings outside alloc_init.c" alloc/huge.c 'static void f(void) { jp__settings_w.check = 1; }'
cp "$tmp/lib/mem/arena.c" "$tmp/saved"
awk 'BEGIN { for (i = 0; i < 601; i++) print "/* a line */" }' >> "$tmp/lib/mem/arena.c"
if run; then echo "FAIL: a file of over 600 lines in lib/ passed the check"; fail=1
elif ! grep -q "^FAIL: lib/mem/arena.c: .* lines, over the 600" "$tmp/out"; then
  echo "FAIL: a long file failed without naming it:"; cat "$tmp/out"; fail=1
else echo "ok: a file of over 600 lines in lib/ is refused"; fi
cp "$tmp/saved" "$tmp/lib/mem/arena.c"
touch "$tmp/lib/stray.c"
if run; then echo "FAIL: a file lying in lib/ passed the check"; fail=1
else echo "ok: a file lying in lib/ is refused"; fi
rm -f "$tmp/lib/stray.c"
if ! run; then echo "FAIL: the copy does not pass once restored:"; cat "$tmp/out"; fail=1; fi
exit $fail
