// launch_support.h — dl_iterate_phdr, which Glibc's Swift module does not export.
#pragma once

/// Shared objects loaded now, the main program left out (the vDSO and the dynamic loader count).
int launch_loaded_shared_objects(void);
