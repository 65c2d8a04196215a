#!/bin/bash
# hammer: does jp_hammer force races on this machine?
# make check-hammer runs jp_hammer(3)'s example 10 times with rounds and 10
# times without, asserts lost increments of the plain counter in at least 9
# of the first 10 and none of the atomic one, and prints the load average.
# Run by .ci/run from the repository root with build/ configured and built
# (another build folder: JPSYNC_BUILD_DIR).  About a second.
set -euo pipefail
make -C "${JPSYNC_BUILD_DIR:-build}" -s check-hammer
