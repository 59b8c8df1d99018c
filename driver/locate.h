/* driver/locate.h: finding a file fusec installs beside its library (the CPU backend's LLVM
 * module, the runtime archive that fusec --emit=lib copies), the same way for each.
 */
#ifndef FUSEC_RUNTIME_LOCATE_H
#define FUSEC_RUNTIME_LOCATE_H

#define RT_LOCATE_MAX 5

/* The places tried, in order, into paths; returns how many: $`env` when set; the directory of
 * the binary that holds libfusec's code (libfusec.so, or an executable linking libfusec.a),
 * where the build tree and an install keep such files; for an installed executable, its
 * ../`libdir` (a relative install libdir: bin/ and lib/ side by side); `build_path` and
 * `install_path`, compiled in ("" for none). */
int rt_locate_candidates(const char *env, const char *file, const char *libdir,
                         const char *build_path, const char *install_path,
                         char paths[RT_LOCATE_MAX][4096]);
/* Whether path is a regular file (a stat: nothing is opened). */
int rt_locate_exists(const char *path);

#endif
