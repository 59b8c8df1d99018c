/* driver/locate.c: the places a file fusec installs beside its library is looked for
 * (driver/locate.h). */
#include "driver/locate.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char anchor = 0; /* an address inside the binary that holds this code */

int rt_locate_candidates(const char *env, const char *file, const char *libdir,
                         const char *build_path, const char *install_path,
                         char paths[RT_LOCATE_MAX][4096]) {
    int n = 0;
    const char *e = env ? getenv(env) : NULL;
    if (e && *e) snprintf(paths[n++], 4096, "%s", e);
    Dl_info info;
    if (dladdr(&anchor, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash) {
            int dir = (int)(slash - info.dli_fname);
            snprintf(paths[n++], 4096, "%.*s/%s", dir, info.dli_fname, file);
            if (libdir && *libdir && libdir[0] != '/')
                snprintf(paths[n++], 4096, "%.*s/../%s/%s", dir, info.dli_fname, libdir, file);
        }
    }
    if (build_path && *build_path) snprintf(paths[n++], 4096, "%s", build_path);
    if (install_path && *install_path) snprintf(paths[n++], 4096, "%s", install_path);
    return n;
}

int rt_locate_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
