/* czlib.h — exposes zlib to Swift (gzip for upload bodies). */
#ifndef CZLIB_H
#define CZLIB_H
#include <zlib.h>
#endif
