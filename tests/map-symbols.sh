#!/bin/sh
# Print "name@NODE" for every global symbol of a version script (default:
# lib/libjpsync.map), one per line, sorted.  Used by the export, man-page and
# packaging checks so that they read the map the same way.
set -eu
map=${1:-${top_srcdir:-.}/lib/libjpsync.map}
perl -0777 -ne '
  s{/\*.*?\*/}{}gs;
  while (/([A-Za-z_][A-Za-z0-9_.]*)\s*\{(.*?)\}\s*[A-Za-z0-9_.]*\s*;/gs) {
    my ($node, $body) = ($1, $2);
    $body =~ s/local:.*//s;
    $body =~ s/global://;
    print "$_\@$node\n" for grep { length } split /[\s;]+/, $body;
  }' "$map" | sort -u
