/* czlib.c — nothing of its own: the target exists to link zlib and expose <zlib.h>. */
#include "czlib.h"
