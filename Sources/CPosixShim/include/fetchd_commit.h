// A constant that Swift (ResultCommitter) and C (bench/snapshot_floor.c) both read, so that the
// benchmark's floor and the daemon can never disagree on the size of a batch.
#ifndef FETCHD_COMMIT_H
#define FETCHD_COMMIT_H

/// The number of results fetchd's commit queue gathers into one batch (one SQLite transaction
/// and two syncfs) while results keep coming. The benchmark's floor writes its rows in
/// transactions of this size.
#define FETCHD_COMMIT_BATCH 32

#endif
