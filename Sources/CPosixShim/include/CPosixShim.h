// Linux calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not set.
#ifndef FETCHD_CPOSIX_SHIM_H
#define FETCHD_CPOSIX_SHIM_H

/// syncfs(2): flushes the whole file system holding `fd`. Returns 0, or -1 with errno set.
int fetchd_syncfs(int fd);

#endif
