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
  echo "note: man-db is not installed; tables are rendered by mandoc only"
fi
if command -v "$MANDOC" >/dev/null 2>&1; then
  renderers="$renderers mandoc"
else
  echo "note: mandoc is not installed; tables are rendered by man-db only"
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
for p in "$top_builddir"/man/man1/jpsync-run.1; do
  [ -f "$p" ] || { echo "FAIL: $p not built"; fail=1; continue; }
  pages="$pages $p"
done

# 1. Tables.
ntables=0
for page in $pages; do
  name=$(basename "$page")
  rel=${page#"$top_srcdir"/}; rel=${rel#"$top_builddir"/}
  t=$(title "$page")
  [ -n "$t" ] && [ "$t" = "$name" ] || continue   # an alias or a .so page
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
exit $fail
