// MadHeader's parse and emit (IBTA Vol 1, 13.4.3: the common MAD header).
#include "cm/mad.h"

namespace uroce::cm {

MadHeader MadHeader::parse(ByteSpan bytes) {
  MadHeader header;
  header.base_version = bytes[0];
  header.management_class = bytes[1];
  header.class_version = bytes[2];
  header.method = bytes[3];
  header.status = load_be16(bytes.data() + 4);
  header.class_specific = load_be16(bytes.data() + 6);
  header.transaction_id = load_be64(bytes.data() + kTransactionIdOffset);
  header.attribute_id = load_be16(bytes.data() + kAttributeIdOffset);
  header.attribute_modifier = load_be32(bytes.data() + 20);
  return header;
}

void MadHeader::emit(MutableByteSpan out) const {
  out[0] = base_version;
  out[1] = management_class;
  out[2] = class_version;
  out[3] = method;
  store_be16(out.data() + 4, status);
  store_be16(out.data() + 6, class_specific);
  store_be64(out.data() + kTransactionIdOffset, transaction_id);
  store_be16(out.data() + kAttributeIdOffset, attribute_id);
  store_be16(out.data() + 18, 0);  // reserved
  store_be32(out.data() + 20, attribute_modifier);
}

}  // namespace uroce::cm
