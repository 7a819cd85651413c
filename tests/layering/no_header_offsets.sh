#!/usr/bin/env bash
# Only the wire layer (src/wire) knows where a header's fields lie. The
# layers that carry datagrams (the engine, the ports, the device, the
# libraries, the simulator, the tools) read them through its views, or
# through the engine's description of what it built (uroce/transmit.h),
# never at an offset of their own. Prints each line that reads a header at
# an offset (a version nibble, a field offset of wire's, an indexed or
# offset read of a datagram's bytes), and fails.
#   tests/layering/no_header_offsets.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"

patterns=(
  '\[0\] *>> *4'                                                          # the IP version nibble
  'wire::(ipv4|ipv6|udp|bth|ethernet)_field::'                            # wire's field offsets
  '\b(datagram|header|ip_header|frame|packet)\[[0-9]+\]'                  # an indexed read of a header
  '\bip\[([4-9]|[1-9][0-9])\]'                                            # the same, past an address's 4 bytes
  '\bbytes\[[1-9][0-9]+\]'
  '\b(datagram|header|ip_header|ip|frame|udp)(\.data\(\))? \+ ([0-9]+|k[A-Za-z]*Offset)\b'  # an offset read
)
regex=$(IFS='|'; echo "${patterns[*]}")
# Declarations of byte arrays (std::uint8_t ip[16]) are not reads.
if grep -rnE "$regex" src/transport src/port src/runtime src/sim src/ibverbs src/rdmacm tools \
     --include='*.cc' --include='*.h' | grep -vE 'std::u?int8_t [a-z_]+\[[0-9]+\];'; then
  echo "the lines above read headers at offsets: use src/wire's views or the engine's Transmit"
  exit 1
fi
echo "no header is read at an offset outside src/wire"
