/* Collectives as SMPI traces them: allreduce, bcast, reduce, barrier. */
#include <mpi.h>
#include <smpi/smpi.h>

int main(int argc, char **argv) {
  int rank;
  double v[256] = {0}, s[256];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int it = 0; it < 2; it++) {
    smpi_execute_flops(5e5);
    MPI_Allreduce(v, s, 256, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Bcast(v, 16, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  MPI_Reduce(v, s, 8, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
