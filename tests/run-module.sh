#!/bin/sh
# run-module.sh [NAME=VALUE]... [--OPTION]... PROGRAM [ARG]... - run PROGRAM,
# a program of the built architecture, on the preload module as jpsync-run
# starts it: NAME=VALUE added to the environment jpsync-run starts in, the
# --OPTIONs given to jpsync-run.
#
# Natively that is `env NAME=VALUE... shim/jpsync-run --OPTION... PROGRAM
# ARG...`.  In an emulated cross build jpsync-run cannot exec a foreign
# program (qemu-user without binfmt_misc), so it prints the environment it
# would set (--print-env --OPTION...) and tests/target-exec.sh starts
# PROGRAM with it (qemu -E LD_PRELOAD=...): the module still runs under
# emulation, and jpsync-run still decides what LD_PRELOAD becomes.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
run="$top_builddir/shim/jpsync-run"
tx="$top_srcdir/tests/target-exec.sh"
nl='
'
vars= opts=
while [ $# -gt 0 ]; do
  case $1 in
    [A-Za-z_]*=*) vars="$vars$1$nl"; shift ;;
    *) break ;;
  esac
done
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break ;;
    --*) opts="$opts$1$nl"; shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: run-module.sh [NAME=VALUE]... [--OPTION]... PROGRAM [ARG]..." >&2; exit 2; }
IFS=$nl
set -f
if [ -z "${JP_EMULATOR:-}" ]; then
  # shellcheck disable=SC2086 # one word per line
  exec env $vars "$run" $opts -- "$@"
fi
# shellcheck disable=SC2086
env=$(sh "$tx" $vars "$run" --print-env $opts) || exit 125
# shellcheck disable=SC2086
exec sh "$tx" $vars$env "$@"
