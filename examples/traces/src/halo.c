/* A 1-D halo exchange: each rank swaps 8 KiB borders with both neighbours
 * (large enough for rendezvous), then a small residual via Sendrecv. */
#include <mpi.h>
#include <smpi/smpi.h>

#define HALO 1024 /* doubles: 8 KiB */

int main(int argc, char **argv) {
  int rank, n;
  static double left_out[HALO], right_out[HALO], left_in[HALO], right_in[HALO];
  int res = 0, res_in = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int left = (rank + n - 1) % n, right = (rank + 1) % n;
  for (int step = 0; step < 3; step++) {
    MPI_Request rq[4];
    MPI_Irecv(left_in, HALO, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(right_in, HALO, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend(right_out, HALO, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[2]);
    MPI_Isend(left_out, HALO, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &rq[3]);
    for (int i = 0; i < 4; i++)
      MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
    smpi_execute_flops(2e6);
    MPI_Sendrecv(&res, 1, MPI_INT, right, 3, &res_in, 1, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
