// launch_support.c — see launch_support.h.
#define _GNU_SOURCE
#include <link.h>
#include <stddef.h>
#include "launch_support.h"

static int count_named(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0') (*(int *)data)++;
    return 0;
}

int launch_loaded_shared_objects(void) {
    int count = 0;
    dl_iterate_phdr(count_named, &count);
    return count;
}
