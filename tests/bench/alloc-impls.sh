# alloc-impls.sh - the allocators the benchmark drivers compare, sourced by
# alloc-bench.sh and mimalloc-bench.sh after driver-common.sh, with
#   impls  the implementations to resolve (jpsync glibc jemalloc mimalloc
#          tcmalloc mimalloc3 snmalloc)
#   peers  build-peers.sh's OUTDIR, or empty (mimalloc3 and snmalloc skipped)
# set.  It finds each allocator's library (Debian's in the library folders,
# the two built ones in $peers, jpsync's preload module in the build tree),
# notes and drops those that are missing, and leaves
#   active        the implementations found, in the order of $impls
#   lib_IMPL      what goes in LD_PRELOAD for IMPL ("none" for glibc)
#   run_env IMPL CMD...      runs CMD with IMPL's allocator preloaded
#   provider_ok IMPL PATH    whether PATH is IMPL's malloc
#   rotate N WORDS...        the words starting at the Nth (interleaving)
# Exits 2 for an unknown implementation or when none is found.
# shellcheck shell=sh
# shellcheck disable=SC2154 # name, notes, impls, top_builddir: the driver's
multiarch=$(${CC:-cc} -print-multiarch 2>/dev/null || true)
libdirs="/usr/lib/$multiarch /lib/$multiarch /usr/lib64 /usr/lib /usr/local/lib"

# find_lib NAME...: the first NAME that exists in a library folder.
find_lib() {
  for n in "$@"; do
    for d in $libdirs; do
      [ -f "$d/$n" ] && { echo "$d/$n"; return 0; }
    done
  done
  return 1
}

jpsync_mod=${JPSYNC_BENCH_JPSYNC_PRELOAD:-$top_builddir/shim/.libs/libjpsync-preload.so}
case $jpsync_mod in /*) ;; *) jpsync_mod=$PWD/$jpsync_mod ;; esac	# the runs cd
jpsync_libpath=$top_builddir/lib/.libs	# libjpsync.so.1, uninstalled

# Resolve each implementation to what goes in LD_PRELOAD ("" for glibc) and
# the object malloc must then come from; note and drop the missing ones.
active=
for impl in $impls; do
  case $impl in
    jpsync)   lib=$jpsync_mod; [ -f "$lib" ] || lib= ;;
    glibc)    lib=none ;;
    jemalloc) lib=$(find_lib libjemalloc.so.2 libjemalloc.so) ;;
    mimalloc) lib=$(find_lib libmimalloc.so.2 libmimalloc.so.2.0 libmimalloc.so) ;;
    tcmalloc) lib=$(find_lib libtcmalloc_minimal.so.4 libtcmalloc.so.4 libtcmalloc_minimal.so libtcmalloc.so) ;;
    mimalloc3) lib=$peers/libmimalloc.so.3; [ -n "$peers" ] && [ -f "$lib" ] || lib= ;;
    snmalloc) lib=$peers/libsnmallocshim.so; [ -n "$peers" ] && [ -f "$lib" ] || lib= ;;
    *) echo "$name.sh: unknown implementation '$impl'" >&2; exit 2 ;;
  esac
  if [ -z "$lib" ]; then
    case $impl in
      jpsync) msg="jpsync: preload module $jpsync_mod not built; jpsync not measured" ;;
      mimalloc3|snmalloc) msg="$impl: not in JPSYNC_BENCH_PEERS_DIR='$peers' (tests/bench/build-peers.sh builds it from its sources); skipped" ;;
      *) msg="$impl: library not found in $libdirs (scripts/install-deps.sh --all installs it); skipped" ;;
    esac
    echo "$msg" >> "$notes"
    echo "note: $msg" >&2
    continue
  fi
  eval "lib_$impl=\$lib"
  active="$active $impl"
done
[ -n "$active" ] || { echo "$name.sh: no implementation to run" >&2; exit 2; }

# run_env IMPL CMD...: CMD with IMPL's allocator preloaded.
run_env() {
  _impl=$1; shift
  eval "_lib=\$lib_$_impl"
  if [ "$_impl" = glibc ]; then
    env -u LD_PRELOAD "$@"
  elif [ "$_impl" = jpsync ]; then
    LD_PRELOAD=$_lib LD_LIBRARY_PATH=$jpsync_libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"
  else
    LD_PRELOAD=$_lib "$@"
  fi
}

# provider_ok IMPL PATH: malloc came from the intended object.
provider_ok() {
  case $1 in
    glibc) case $2 in */libc.so*|*/libc-*) return 0;; esac ;;
    jpsync) case $2 in *jpsync*) return 0;; esac ;;
    *) eval "_lib=\$lib_$1"
       [ "$(readlink -f "$2" 2>/dev/null)" = "$(readlink -f "$_lib")" ] && return 0 ;;
  esac
  return 1
}

# rotate N WORDS...: the words, starting at the Nth (0-based, modulo count).
rotate() {
  _n=$1; shift; _c=$#; _k=$((_n % _c)); _i=0; _head=; _tail=
  for _w in "$@"; do
    if [ $_i -lt $_k ]; then _tail="$_tail $_w"; else _head="$_head $_w"; fi
    _i=$((_i + 1))
  done
  # shellcheck disable=SC2086 # words out, separated by one space
  echo $_head $_tail
}
