#!/bin/sh
# The pages as a reader sees them, rendered at 80 columns by man-db
# (MANWIDTH=80 man -l) and by mandoc (mandoc -T ascii -O width=80), each one
# that is installed here (at least one is needed: SKIP, saying so, when
# neither is).
#
# 1. Tables read at 80 columns.  Every table (an mdoc .Bl -column list, or a
#    tbl .TS/.TE block) of every page is rendered in its page, between two
#    marker words the check adds to a copy of the page around it, and fails
#    - when a line of it is wider than 80 columns, or
#    - for a .Bl -column list, when it renders on more lines than it has
#      rows (.It lines): a cell too wide for its column wraps, and its row
#      spills over several lines, the rest of it pushed to the right.
#    Blank lines are not counted (the space before and after a list).  A
#    tbl table's rows may span lines on purpose (T{ text blocks}), so it is
#    held to the width rule only.  Lines outside tables wider than 80
#    columns (a long line of a literal example) are listed as notes.
# 2. Alias pages work from the source tree.  An alias page is one whose .Dt
#    (or .TH) title names another page: man/man3/jp_alloc_aligned.3, whose
#    title is JP_ALLOC, is the page jp_alloc(3) under another name.  In the
#    source tree it is a symbolic link to that page (a copy of it in the
#    release tarball: make dist follows links), so that
#    `man -l man/man3/jp_alloc_aligned.3` from the top of the tree shows
#    it.  A ".so man3/jp_alloc.3" page does not render there: man-db's
#    zsoelim looks for a .so file in the current directory, then under
#    each folder of the manual path, never beside the page (nor does
#    mandoc).  Every alias must be its page's bytes, which makes it render
#    as its page; man-db renders one alias of each page, mandoc every
#    alias, from the top of the source tree with an empty manual path (so
#    that pages installed on this machine cannot stand in), and the output
#    must be its page's, with no message.  A .so page fails here.
# 3. Alias pages work installed.  make install writes each alias as the
#    one line ".so manN/PAGE.N" (Makefile.am, install-man-aliases), as the
#    tree had them before: man-db, mandoc and lintian read it, and
#    dh_installman turns it into a symbolic link.  The check installs the
#    pages alone into a temporary DESTDIR, checks every alias's line, and
#    renders the aliases as a reader would: man-db by name through the
#    manual path (MANPATH=DESTDIR's man folder man 3 NAME, one alias of
#    each page), mandoc from the top of the manual tree (every alias).
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
LC_ALL=C; export LC_ALL
unset MANPAGER PAGER MAN_KEEP_FORMATTING MANROFFOPT
# man-db's seccomp sandbox fails in some containers; it guards nothing here.
MAN_DISABLE_SECCOMP=1; export MAN_DISABLE_SECCOMP
: "${MANDOC:=mandoc}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)

renderers=
if man --version 2>/dev/null | grep -q '^man [0-9]'; then
  renderers="man-db"
else
  echo "note: man-db is not installed; the pages are rendered by mandoc only"
fi
if command -v "$MANDOC" >/dev/null 2>&1; then
  renderers="$renderers mandoc"
else
  echo "note: mandoc is not installed; the pages are rendered by man-db only"
fi
if [ -z "$renderers" ]; then
  echo "SKIP: neither man-db's man nor mandoc is installed: nothing renders the pages"
  exit 77
fi

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty"
fail=0

# render RENDERER FILE: the page at 80 columns on stdout, plain text (no
# overstrike, tabs expanded), the renderer's messages in $tmp/err.
render() {
  case $1 in
    man-db) MANPATH="$tmp/empty" MANWIDTH=80 man -l "$2" ;;
    mandoc) "$MANDOC" -T ascii -O width=80 "$2" ;;
  esac > "$tmp/raw" 2> "$tmp/err" || return 1
  perl -pe '1 while s/[^\x08]\x08//; s/\x08//g;
    1 while s/^([^\t\n]*)\t/$1 . " " x (8 - length($1) % 8)/e' "$tmp/raw"
}

# title PAGE: the page's name from its .Dt or .TH line, as a file name
# ("jp_alloc.3"); empty for a page that has neither (a .so page).
title() {
  sed -n -e 's/^\.Dt[ 	][ 	]*\([^ 	]*\)[ 	][ 	]*\([^ 	]*\).*/\1.\2/p' \
         -e 's/^\.TH[ 	][ 	]*"\{0,1\}\([^ 	"]*\)"\{0,1\}[ 	][ 	]*"\{0,1\}\([^ 	"]*\).*/\1.\2/p' "$1" |
    head -n 1 | tr '[:upper:]' '[:lower:]'
}

# The pages: every page of man/ and the pages built from a .in.
pages=
for p in "$top_srcdir"/man/man*/*.[0-9]; do pages="$pages $p"; done
p=$top_builddir/man/man1/jpsync-run.1
if [ -f "$p" ]; then pages="$pages $p"; else echo "FAIL: $p not built"; fail=1; fi

# 1. Tables.
ntables=0
for page in $pages; do
  name=$(basename "$page")
  rel=${page#"$top_srcdir"/}; rel=${rel#"$top_builddir"/}
  t=$(title "$page")
  [ -n "$t" ] && [ "$t" = "$name" ] || continue   # an alias, or a .so page
  # The copy with markers: \%JPTABLEBEGINn before the table's first line
  # and \%JPTABLEENDn after its last (\% keeps a marker from being
  # hyphenated); $tmp/rows lists "n line rows" (rows -1 for tbl).
  perl -e '
    my ($src, $dst, $rows) = @ARGV;
    open my $in, "<", $src or die "$src: $!";
    open my $out, ">", $dst or die "$dst: $!";
    open my $rw, ">", $rows or die "$rows: $!";
    my ($n, $depth, $tdepth, $count, $tbl, $start) = (0, 0, -1, 0, 0, 0);
    while (<$in>) {
      if (/^\.TS\b/) { $n++; print $out "\\%JPTABLEBEGIN$n\n"; $tbl = 1; $start = $.; }
      if (/^\.Bl\b/) {
        $depth++;
        if ($tdepth < 0 && /^\.Bl\s.*-column\b/) {
          $n++; print $out "\\%JPTABLEBEGIN$n\n";
          ($tdepth, $count, $start) = ($depth, 0, $.);
        }
      }
      $count++ if $tdepth == $depth && /^\.It\b/;
      print $out $_;
      if ($tbl && /^\.TE\b/) {
        print $out "\\%JPTABLEEND$n\n"; print $rw "$n $start -1\n"; $tbl = 0;
      }
      if (/^\.El\b/) {
        if ($depth == $tdepth) {
          print $out "\\%JPTABLEEND$n\n"; print $rw "$n $start $count\n";
          $tdepth = -1;
        }
        $depth--;
      }
    }' "$page" "$tmp/marked" "$tmp/rows"
  [ -s "$tmp/rows" ] || { : > "$tmp/rows"; }
  ntables=$((ntables + $(wc -l < "$tmp/rows")))
  for r in $renderers; do
    render "$r" "$tmp/marked" > "$tmp/out" || {
      echo "FAIL: $rel does not render with $r:"; cat "$tmp/err"; fail=1; continue; }
    if ! perl -e '
      my ($out, $rows, $rel, $r) = @ARGV;
      open my $fh, "<", $out or die; my @l = <$fh>; chomp @l;
      open $fh, "<", $rows or die; my @t = map { [split] } <$fh>;
      my $bad = 0; my %in;
      for my $t (@t) {
        my ($n, $line, $want) = @$t;
        my ($b) = grep { $l[$_] =~ /JPTABLEBEGIN$n\b/ } 0 .. $#l;
        my ($e) = grep { $l[$_] =~ /JPTABLEEND$n\b/ } 0 .. $#l;
        if (!defined $b || !defined $e || $e <= $b) {
          print "FAIL: $rel ($r): cannot find the table of line $line in the rendered page\n";
          $bad = 1; next;
        }
        my @body = @l[$b + 1 .. $e - 1];
        $in{$_} = 1 for $b + 1 .. $e - 1;
        my @text = grep { /\S/ } @body;
        my @wide = grep { length > 80 } @body;
        my $what = "";
        $what .= sprintf(" %d line(s) wider than 80 columns (up to %d);", scalar @wide,
                         (sort { $b <=> $a } map { length } @wide)[0]) if @wide;
        $what .= sprintf(" its %d rows take %d lines (a row wraps);", $want, scalar @text)
          if $want >= 0 && @text != $want;
        next unless $what;
        $what =~ s/;$//;
        print "FAIL: $rel ($r): the table of line $line:$what\n";
        print "  | $_\n" for @body;
        $bad = 1;
      }
      my @long = grep { !$in{$_} && length($l[$_]) > 80 } 0 .. $#l;
      printf "note: %s (%s): %d line(s) outside tables wider than 80 columns, first: %s\n",
        $rel, $r, scalar @long, $l[$long[0]] =~ s/^\s+//r if @long;
      exit $bad;
    ' "$tmp/out" "$tmp/rows" "$rel" "$r"; then
      [ -s "$tmp/err" ] && { echo "  $r said:"; sed 's/^/  /' "$tmp/err"; }
      fail=1
    fi
  done
done
[ $fail -eq 0 ] && echo "ok: the $ntables tables of the pages read at 80 columns ($renderers)"

# 2. The aliases from the top of the source tree.  An alias that is its
# page's bytes (a link, or the tarball's copy) renders as its page does, so
# every alias is compared with its page, and read by man-db through one
# alias of each page (a full rendering costs man-db a third of a second);
# mandoc, fast, reads every one.
cd "$top_srcdir"
aliases='' targets='' one='' sopages=''
for page in man/man*/*.[0-9]; do
  name=$(basename "$page"); dir=$(dirname "$page")
  t=$(title "$page") so=
  if [ -z "$t" ]; then
    # A .so page: its page is the one it names, and it is read as an alias
    # (it fails: man -l resolves the .so against the current directory).
    so=$(sed -n '1s/^\.so[ 	][ 	]*//p' "$page")
    [ -n "$so" ] || { echo "FAIL: $page has no .Dt or .TH title"; fail=1; continue; }
    t=$(basename "$so"); sopages="$sopages $page"
  fi
  [ "$t" = "$name" ] && continue
  if [ ! -f "$dir/$t" ]; then
    echo "FAIL: $page is titled as $dir/$t, which does not exist"; fail=1; continue
  fi
  if [ -z "$so" ] && ! cmp -s "$page" "$dir/$t"; then
    echo "FAIL: $page is titled as $dir/$t but is not the same page" \
      "(an alias is a symbolic link to its page)"; fail=1; continue
  fi
  aliases="$aliases $page"; targets="$targets $dir/$t"
  case " $one " in *" $dir/$t="*) ;; *) one="$one $dir/$t=$page" ;; esac
done
[ -n "$aliases" ] || { echo "FAIL: no alias pages in man/ (an alias is titled as another page)"; exit 1; }
nal=$(echo "$aliases" | wc -w); npages=$(echo "$one" | wc -w)
[ $fail -eq 0 ] && [ -z "$sopages" ] &&
  echo "ok: the $nal alias pages are the bytes of their $npages pages"
# same RENDERER WHAT: $tmp/a (the aliases) and $tmp/t (their pages) are the
# same, not empty, and the renderer said nothing.
same() {
  if [ -s "$tmp/t" ] && [ ! -s "$tmp/ea" ] && cmp -s "$tmp/a" "$tmp/t"; then return 0; fi
  echo "FAIL: $2 ($1):"; sed 's/^/  /' "$tmp/ea"; fail=1; return 1
}
for r in $renderers; do
  case $r in
    man-db) man_() { MANPATH="$tmp/empty" MANWIDTH=80 man -l "$@"; }
            read_a=$(for x in $one; do printf '%s ' "${x#*=}"; done)
            read_t=$(for x in $one; do printf '%s ' "${x%%=*}"; done) ;;
    mandoc) man_() { "$MANDOC" -T ascii -O width=80 "$@"; }
            read_a=$aliases read_t=$targets ;;
  esac
  # shellcheck disable=SC2086 # lists of file names
  man_ $read_a > "$tmp/a" 2> "$tmp/ea" || true
  # shellcheck disable=SC2086
  man_ $read_t > "$tmp/t" 2> "$tmp/et" || true
  n=$(echo "$read_a" | wc -w)
  if same "$r" "the alias pages do not all render from the top of the source tree as their pages"; then
    echo "ok: $n alias pages render from the top of the source tree as their pages ($r)"
    continue
  fi
  # shellcheck disable=SC2086
  set -- $read_t
  for a in $read_a; do
    man_ "$a" > "$tmp/a" 2> "$tmp/ea" || true
    man_ "$1" > "$tmp/t" 2> /dev/null || true
    same "$r" "$a does not render as $1 from the top of the source tree" || true
    shift
  done
done
if [ -n "$sopages" ]; then
  echo "FAIL: these are .so pages; make each a symbolic link to its page (make install"
  echo "  writes the .so line):$sopages"
  fail=1
fi

# 3. The aliases installed: only the pages, into a DESTDIR.  Every alias is
# checked to be its .so line; man-db reads one alias of each page by name
# through the manual path, mandoc every one from the top of the manual tree
# (where mandoc's man resolves .so).  Every alias here is of section 3.
make -s -C "$top_builddir" install-man install-man-aliases DESTDIR="$tmp/inst" \
  > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; echo "FAIL: make install-man install-man-aliases"; exit 1; }
mandir=$(find "$tmp/inst" -type d -name man3 | sed 1q)
mandir=${mandir%/man3}
[ -n "$mandir" ] || { echo "FAIL: make install-man installed no man3 folder"; exit 1; }
ifail=0
# shellcheck disable=SC2086
set -- $targets
for a in $aliases; do
  name=$(basename "$a"); sec=${name##*.}; want=".so man$sec/$(basename "$1")"
  f="$mandir/man$sec/$name"
  if [ -h "$f" ] || [ ! -f "$f" ] || [ "$(cat "$f")" != "$want" ]; then
    echo "FAIL: $a is not installed as the one line \"$want\":"
    ls -l "$f" 2>&1 | sed 's/^/  /'; [ -f "$f" ] && head -n 3 "$f" | sed 's/^/  | /'
    ifail=1
  fi
  shift
done
[ $ifail -eq 0 ] && echo "ok: make install writes the $nal alias pages as .so links"
[ $ifail -eq 0 ] || fail=1
names() { for x in "$@"; do x=$(basename "$x"); printf '%s ' "${x%.*}"; done; }
for r in $renderers; do
  case $r in
    man-db)
      # shellcheck disable=SC2046
      MANPATH=$mandir MANWIDTH=80 man 3 $(names $(for x in $one; do echo "${x#*=}"; done)) \
        > "$tmp/a" 2> "$tmp/ea" || true
      # shellcheck disable=SC2046
      MANPATH=$mandir MANWIDTH=80 man 3 $(names $(for x in $one; do echo "${x%%=*}"; done)) \
        > "$tmp/t" 2> "$tmp/et" || true
      n=$npages ;;
    mandoc)
      # shellcheck disable=SC2046
      (cd "$mandir" && "$MANDOC" -T ascii -O width=80 $(printf 'man3/%s.3 ' $(names $aliases))) \
        > "$tmp/a" 2> "$tmp/ea" || true
      # shellcheck disable=SC2046
      (cd "$mandir" && "$MANDOC" -T ascii -O width=80 $(printf 'man3/%s.3 ' $(names $targets))) \
        > "$tmp/t" 2> "$tmp/et" || true
      n=$nal ;;
  esac
  same "$r" "the installed alias pages do not all render as their pages" &&
    echo "ok: $n installed alias pages render as their pages ($r)"
done
exit $fail
