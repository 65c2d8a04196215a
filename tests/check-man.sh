#!/bin/sh
# Every page lints clean under mandoc -Tlint and has the sections style.md
# asks for, every public function (every name in lib/libjpsync.map) has a
# page or an alias page in man/man3 (a link to the page that documents it,
# whose .Dt title it carries; tests/check-man-render.sh reads the aliases),
# jpsync(7) lists every JPSYNC_* variable of lib/base/options.c with its
# default, and the EXAMPLES of every page compile against the headers.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
if [ -z "${MANDOC:-}" ] || ! command -v "$MANDOC" >/dev/null 2>&1; then
  echo "FAIL: mandoc not found (install mandoc)"; exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
cd "$top_srcdir/man"
# is_alias PAGE: true for a page that is another page under another name (its
# .Dt title is not its file name) or a .so page; they are linted, and their
# examples compiled, as the page they stand for.
is_alias() {
  head -n1 "$1" | grep -q '^\.so ' && return 0
  t=$(sed -n 's/^\.Dt[ 	][ 	]*\([^ 	]*\)[ 	][ 	]*\([^ 	]*\).*/\1.\2/p' "$1" |
    head -n 1 | tr '[:upper:]' '[:lower:]')
  [ -n "$t" ] && [ "$t" != "$(basename "$1")" ]
}
for page in man*/*.[0-9]; do
  is_alias "$page" && continue
  if ! "$MANDOC" -Tlint -W warning "$page" > "$tmp/lint" 2>&1 || [ -s "$tmp/lint" ]; then
    echo "FAIL: mandoc -Tlint $page:"; cat "$tmp/lint"; fail=1
  fi
done
# The pages made at build time (jpsync-run.1, from its .in with the
# configured pkglibdir): linted as built, no @VARIABLE@ left.
for page in "$top_builddir"/man/man1/jpsync-run.1; do
  [ -f "$page" ] || { echo "FAIL: $page not built"; fail=1; continue; }
  if ! "$MANDOC" -Tlint -W warning "$page" > "$tmp/lint" 2>&1 || [ -s "$tmp/lint" ]; then
    echo "FAIL: mandoc -Tlint $page:"; cat "$tmp/lint"; fail=1
  fi
  if grep -n '@[a-z_]*@' "$page"; then echo "FAIL: $page has unsubstituted names"; fail=1; fi
done
# The sections style.md asks for (practical subset): every page has NAME,
# SYNOPSIS, DESCRIPTION and SEE ALSO; a man3 page also LIBRARY and RETURN
# VALUES.  (mandoc -Tlint above already checks their order.)
for page in man*/*.[0-9]; do
  is_alias "$page" && continue
  req="NAME SYNOPSIS DESCRIPTION SEE_ALSO"
  case $page in man3/*) req="$req LIBRARY RETURN_VALUES" ;; esac
  for sec in $req; do
    sec=$(echo "$sec" | tr _ ' ')
    grep -q "^\.Sh $sec\$" "$page" ||
      { echo "FAIL: $page has no $sec section"; fail=1; }
  done
done

# jpsync(7)'s ENVIRONMENT lists exactly the variables of the option table in
# lib/base/options.c, each with its default ("Default 32." for a size, "Default
# off." for a boolean, a signal, a file or a switch that is off); so does the README's table
# under "## Tuning variables".
if ! perl -e '
  my ($src, $page) = @ARGV;
  open my $fh, "<", $src or die "$src: $!"; local $/; my $c = <$fh>;
  my ($table) = $c =~ /jp__option_table\[\]\s*=\s*\{(.*?)\n\};/s
    or die "no jp__option_table in $src\n";
  my %want;
  # A default is a C constant expression ("4096", "(uint64_t)4 << 20"):
  # casts and integer suffixes dropped, it is evaluated to a number.
  # OPT(name, flag, arg, kind, bytes, field, default, min, max, help)
  while ($table =~ /OPT\(\s*"(\w+)"\s*,\s*"[\w-]+"\s*,\s*(?:"\w+"|NULL)\s*,\s*(\w+)\s*,\s*\w+\s*,\s*\w+\s*,\s*([^,]+?)\s*,/g) {
    my ($n, $kind, $expr) = ($1, $2, $3);
    (my $def = $expr) =~ s/\((?:u?int\d+_t|size_t|unsigned)\)//g;
    $def =~ s/\b(\d+)(?:ULL|UL|U|LL|L)\b/$1/gi;
    $def =~ /^[\d\s()<>*+]+$/
      or die "cannot read the default of JPSYNC_$n in $src: $expr\n";
    $def = eval $def;
    $want{"JPSYNC_$n"} = ($kind eq "JP_OPT_BOOL" || $kind eq "JP_OPT_STATS" ||
			  $kind eq "JP_OPT_SIGNAL" || $kind eq "JP_OPT_FILE")
      ? ($def ? "on" : "off") :
      $kind eq "JP_OPT_FORMAT" ? ("text", "json")[$def] : $def;
  }
  die "no OPT() entries in jp__option_table\n" unless %want;
  my $rows = () = $table =~ /\bOPT\(/g;
  die "read ", scalar(keys %want), " of the $rows OPT() rows of $src\n"
    unless keys %want == $rows;
  # The pages may write a size default with a K, M or G suffix ("4M").
  my $num = sub {
    my ($s) = @_;
    return $s unless $s =~ /^(\d+)([KMG]?)$/;
    return $1 * { "" => 1, K => 1 << 10, M => 1 << 20, G => 1 << 30 }->{$2};
  };
  open $fh, "<", $page or die "$page: $!"; my $m = <$fh>;
  my ($env) = $m =~ /^\.Sh ENVIRONMENT\n(.*?)(?=^\.Sh |\z)/ms
    or die "$page has no ENVIRONMENT section\n";
  my (%have, $cur);
  for (split /\n/, $env) {
    if (/^\.It Ev (JPSYNC_\w+)/) { $cur = $1; $have{$cur} //= ""; next }
    if (/^\.(It|El)\b/) { undef $cur; next }
    $have{$cur} = $1 if defined $cur && /^Default (\S+?)\.?$/;
  }
  my $bad = 0;
  for my $v (sort keys %want) {
    if (!exists $have{$v}) {
      print "FAIL: jpsync(7) ENVIRONMENT does not list $v\n"; $bad = 1;
    } elsif ($num->($have{$v}) ne $want{$v}) {
      print "FAIL: jpsync(7) gives $v the default \"$have{$v}\", lib/base/options.c $want{$v}\n";
      $bad = 1;
    }
  }
  for my $v (sort keys %have) {
    next if exists $want{$v};
    print "FAIL: jpsync(7) ENVIRONMENT lists $v, which lib/base/options.c does not read\n";
    $bad = 1;
  }
  print "ok: jpsync(7) ENVIRONMENT lists the ", scalar(keys %want),
    " variables of lib/base/options.c with their defaults\n" unless $bad;

  # The same for the README table under "## Tuning variables".
  my $readme = $ARGV[2];
  if (open $fh, "<", $readme) {
    my $r = <$fh>;
    my ($sec) = $r =~ /^## Tuning variables\n(.*?)(?=^## |\z)/ms;
    my %rd;
    $rd{$1} = $2 while defined $sec && $sec =~ /^\| `(JPSYNC_\w+)` \| ([^|]*?) \|/mg;
    my $rbad = 0;
    for my $v (sort keys %want) {
      if (!exists $rd{$v}) {
        print "FAIL: README.md Tuning variables does not list $v\n"; $rbad = 1;
      } elsif ($num->($rd{$v}) ne $want{$v}) {
        print "FAIL: README.md gives $v the default \"$rd{$v}\", lib/base/options.c $want{$v}\n";
        $rbad = 1;
      }
    }
    for my $v (sort keys %rd) {
      next if exists $want{$v};
      print "FAIL: README.md Tuning variables lists $v, which lib/base/options.c does not read\n";
      $rbad = 1;
    }
    print "ok: README.md Tuning variables matches lib/base/options.c\n" unless $rbad;
    $bad ||= $rbad;
  }
  exit $bad;
' ../lib/base/options.c man7/jpsync.7 ../README.md; then
  fail=1
fi

sh ../tests/map-symbols.sh ../lib/libjpsync.map > "$tmp/map" ||
  { echo "FAIL: cannot read the names of lib/libjpsync.map"; exit 1; }
names=$(sed 's/@.*//' "$tmp/map")
[ -n "$names" ] || { echo "FAIL: no public names in lib/libjpsync.map"; exit 1; }
for n in $names; do
  [ -f "man3/$n.3" ] || { echo "FAIL: no page man3/$n.3 for public function $n"; fail=1; }
done

# EXAMPLES: the text between ".Sh EXAMPLES" and the next .Sh, inside .Bd
# -literal; a page whose example is a fragment marks it with a comment line
# ".\\\" example: fragment" and is skipped.
i=0
for page in man*/*.[0-9]; do
  is_alias "$page" && continue
  grep -q '^\.\\" example: fragment' "$page" && continue
  grep -q '^\.Sh EXAMPLES' "$page" || continue
  i=$((i + 1))
  perl -ne '
    if (/^\.Sh /) { $in = /^\.Sh EXAMPLES/ ? 1 : 0; next }
    next unless $in;
    if (/^\.Bd -literal/) { $lit = 1; next }
    if (/^\.Ed/) { $lit = 0; next }
    next unless $lit;
    s/\\e/\\/g; s/\\&//g; s/\\\(aq/\x27/g; s/\\-/-/g; s/\\\(dq/"/g;
    print' "$page" > "$tmp/ex$i.c"
  grep -q 'main *(' "$tmp/ex$i.c" || continue
  if ! $CC ${SANITIZER_CFLAGS:-} -std=c11 -D_GNU_SOURCE -Wall -Werror -c \
       -I"$top_srcdir/include" -I"$top_builddir/include" \
       -o "$tmp/ex$i.o" "$tmp/ex$i.c" 2> "$tmp/ex$i.err"; then
    echo "FAIL: the EXAMPLES of $page do not compile:"; cat "$tmp/ex$i.err"; fail=1
  else
    echo "ok: EXAMPLES of $page compile"
  fi
done
[ $fail -eq 0 ] && echo "ok: all pages lint clean and every public name has a page"
exit $fail
