/* An MPI-IO job for tests/report.rs: every rank opens one shared file
 * (collective), sets a view, writes with independent (MPI_File_write_at) and
 * collective (MPI_File_write_at_all) calls, a non-blocking MPI_File_iwrite_at,
 * reads with collective (MPI_File_read_at_all), split-collective
 * (MPI_File_read_at_all_begin/end) and independent (MPI_File_read_at) calls,
 * syncs and closes; then reopens the file alone (MPI_COMM_SELF, read-only)
 * and reads it once. The view is set with an info object (a hint). With a
 * second argument `derived`, one more independent write uses a derived
 * datatype (3 contiguous ints). Counts and sizes depend on the rank, so per-rank
 * counters differ. Each rank prints one line with its own tally under
 * Darshan's MPIIO rules (bytes = count * MPI_Type_size), its pid, and the
 * CLOCK_MONOTONIC ns spent inside MPI-IO calls (an upper bound for the time
 * a tracer can see inside them).
 *
 * usage: mpiio_app FILE [derived] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long t0, in_mpiio;
#define TIMED(call)                 \
    do {                            \
        t0 = now_ns();              \
        if ((call) != MPI_SUCCESS)  \
            abort();                \
        in_mpiio += now_ns() - t0;  \
    } while (0)

int main(int argc, char **argv) {
    int rank, size, tsize;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static char buf[1 << 16];
    memset(buf, 'a' + rank, sizeof buf);
    long long indep_w = 0, coll_w = 0, nb_w = 0, indep_r = 0, coll_r = 0, split_r = 0;
    long long bytes_w = 0, bytes_r = 0;
    int derived = argc > 2 && strcmp(argv[2], "derived") == 0;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ebq_test_hint", "1");
    MPI_File fh;
    int amode = MPI_MODE_CREATE | MPI_MODE_RDWR;
    TIMED(MPI_File_open(MPI_COMM_WORLD, argv[1], amode, MPI_INFO_NULL, &fh));
    TIMED(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info));
    MPI_Offset base = (MPI_Offset)rank << 20;
    /* rank + 1 independent writes of 1000 + 10 * rank bytes */
    for (int i = 0; i <= rank; i++) {
        int n = 1000 + 10 * rank;
        TIMED(MPI_File_write_at(fh, base + i * 2000, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
        indep_w++, bytes_w += n;
    }
    if (derived) { /* 5 elements of 3 contiguous ints */
        MPI_Datatype three;
        MPI_Type_contiguous(3, MPI_INT, &three);
        MPI_Type_commit(&three);
        MPI_Type_size(three, &tsize);
        TIMED(MPI_File_write_at(fh, base + 40000, buf, 5, three, MPI_STATUS_IGNORE));
        indep_w++, bytes_w += 5LL * tsize;
        MPI_Type_free(&three);
    }
    /* two collective writes of 512 ints */
    MPI_Type_size(MPI_INT, &tsize);
    for (int i = 0; i < 2; i++) {
        TIMED(MPI_File_write_at_all(fh, base + 16384 + i * 4096, buf, 512, MPI_INT, MPI_STATUS_IGNORE));
        coll_w++, bytes_w += 512LL * tsize;
    }
    /* one non-blocking write of 300 doubles */
    MPI_Request req;
    MPI_Type_size(MPI_DOUBLE, &tsize);
    TIMED(MPI_File_iwrite_at(fh, base + 32768, buf, 300, MPI_DOUBLE, &req));
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    nb_w++, bytes_w += 300LL * tsize;
    /* a collective read of 4000 bytes, a split-collective read of 100 shorts */
    TIMED(MPI_File_read_at_all(fh, base, buf, 4000, MPI_BYTE, MPI_STATUS_IGNORE));
    coll_r++, bytes_r += 4000;
    MPI_Type_size(MPI_SHORT, &tsize);
    TIMED(MPI_File_read_at_all_begin(fh, base + 16384, buf, 100, MPI_SHORT));
    MPI_File_read_at_all_end(fh, buf, MPI_STATUS_IGNORE);
    split_r++, bytes_r += 100LL * tsize;
    /* 3 - rank independent reads of 64 bytes (none on rank 3) */
    for (int i = 0; i < 3 - rank; i++) {
        TIMED(MPI_File_read_at(fh, base + i * 64, buf, 64, MPI_BYTE, MPI_STATUS_IGNORE));
        indep_r++, bytes_r += 64;
    }
    TIMED(MPI_File_sync(fh));
    TIMED(MPI_File_close(&fh));
    /* the same file again, this rank alone: an independent open, one read of 128 bytes */
    TIMED(MPI_File_open(MPI_COMM_SELF, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    TIMED(MPI_File_read_at(fh, base, buf, 128, MPI_BYTE, MPI_STATUS_IGNORE));
    indep_r++, bytes_r += 128;
    TIMED(MPI_File_close(&fh));
    MPI_Info_free(&info);
    printf("TALLY {\"rank\":%d,\"pid\":%d,\"size\":%d,\"in_mpiio_ns\":%lld,\"counters\":{"
           "\"MPIIO_INDEP_OPENS\":1,\"MPIIO_COLL_OPENS\":1,\"MPIIO_MODE\":%d,\"MPIIO_HINTS\":1,\"MPIIO_VIEWS\":1,"
           "\"MPIIO_INDEP_WRITES\":%lld,\"MPIIO_COLL_WRITES\":%lld,\"MPIIO_SPLIT_WRITES\":0,\"MPIIO_NB_WRITES\":%lld,"
           "\"MPIIO_INDEP_READS\":%lld,\"MPIIO_COLL_READS\":%lld,\"MPIIO_SPLIT_READS\":%lld,\"MPIIO_NB_READS\":0,"
           "\"MPIIO_SYNCS\":1,\"MPIIO_RW_SWITCHES\":1,\"MPIIO_BYTES_WRITTEN\":%lld,\"MPIIO_BYTES_READ\":%lld,\"EBQ_ERRORS\":0}}\n",
           rank, (int)getpid(), size, in_mpiio, MPI_MODE_RDONLY, indep_w, coll_w, nb_w, indep_r, coll_r, split_r, bytes_w, bytes_r);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
