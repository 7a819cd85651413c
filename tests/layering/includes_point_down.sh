#!/usr/bin/env bash
# The layers' includes point down: the wire format, the verbs objects, the
# ports and the connection manager include neither the engine's API
# (uroce/engine.h) nor the runtime's (uroce/device.h) nor anything of the
# layers above them; they share words through uroce/vocabulary.h. Public
# headers (include/uroce) include only public headers. Inside the engine,
# the protocol roles (requester, completer, responder) reach the engine
# through transport/role_context.h, never its core (transport/engine_core.h).
# Prints each include that breaks this, and fails.
#   tests/layering/includes_point_down.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"
broken=0

upward='#include "(uroce/engine\.h|uroce/device\.h|transport/|runtime/|ibverbs/|rdmacm/|rsockets/|sim/|sim_mpi/|tools/)'
for layer in src/common src/wire src/verbs src/port src/cm; do
  if grep -rnE "$upward" "$layer"; then broken=1; fi
done

roles=(requester completer responder responder_replies read_atomic_responses loss_probe
       multipath_acknowledgements out_of_order congestion role_context)
for role in "${roles[@]}"; do
  for file in "src/transport/$role.h" "src/transport/$role.cc"; do
    [ -f "$file" ] || continue
    if grep -nH '#include "transport/engine_core.h"' "$file"; then broken=1; fi
  done
done

if grep -nE '#include "' include/uroce/*.h | grep -vE '#include "uroce/[a-z_]+\.h"'; then broken=1; fi

[ "$broken" = 0 ] && echo "every include points down"
exit "$broken"
