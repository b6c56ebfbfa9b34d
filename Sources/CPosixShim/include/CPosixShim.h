// Linux calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not set.
#ifndef FETCHD_CPOSIX_SHIM_H
#define FETCHD_CPOSIX_SHIM_H

/// syncfs(2): flushes the whole file system holding `fd`. Returns 0, or -1 with errno set.
int fetchd_syncfs(int fd);

/// Gives the calling thread (only it, not the process) the nice value `nice`, so it runs on
/// CPU time nothing else wants. Returns 0, or -1 with errno set.
int fetchd_nice_this_thread(int nice);

#endif
