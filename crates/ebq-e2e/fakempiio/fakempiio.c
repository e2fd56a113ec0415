/* A stand-in for an MPI-IO library: the one call ebq's uprobe tests trace.
 * MPI_File_write_at(fh, offset, buf, count, datatype, status) writes `count`
 * bytes at `offset` of the file whose descriptor `fh` points to, like MPI
 * with datatype MPI_BYTE, and returns MPI_SUCCESS (0) or -1. */
#include <unistd.h>

int MPI_File_write_at(void *fh, long long offset, const void *buf, int count, int datatype, void *status)
{
	(void)datatype;
	(void)status;
	return pwrite(*(int *)fh, buf, (size_t)count, (off_t)offset) == count ? 0 : -1;
}
