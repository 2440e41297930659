/* layout.c — CCrashRecordLayout is a header-only C module (include/cc_record.h, the record
 * layout shared by the writer in CShims and the Swift reader in CrashRecordFormat); SwiftPM
 * wants one source file per C target. */
#include "cc_record.h"
