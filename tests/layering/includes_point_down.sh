#!/usr/bin/env bash
# The layers' includes point down: the wire format, the verbs objects, the
# ports and the connection manager include neither the engine's API
# (uroce/engine.h) nor the runtime's (uroce/device.h) nor anything of the
# layers above them; they share words through uroce/vocabulary.h. Public
# headers (include/uroce) include only public headers. Prints each include
# that breaks this, and fails.
#   tests/layering/includes_point_down.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"
broken=0

upward='#include "(uroce/engine\.h|uroce/device\.h|transport/|runtime/|ibverbs/|rdmacm/|rsockets/|sim/|sim_mpi/|tools/)'
for layer in src/common src/wire src/verbs src/port src/cm; do
  if grep -rnE "$upward" "$layer"; then broken=1; fi
done

if grep -nE '#include "' include/uroce/*.h | grep -vE '#include "uroce/[a-z_]+\.h"'; then broken=1; fi

[ "$broken" = 0 ] && echo "every include points down"
exit "$broken"
