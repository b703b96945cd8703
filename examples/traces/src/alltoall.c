/* The block collectives as SMPI traces them: gather, scatter, allgather,
 * alltoall (each rank's block: 4, 3, 5 doubles; 6 ints). */
#include <mpi.h>

int main(int argc, char **argv) {
  double a[64] = {0}, b[256];
  int x[64] = {0}, y[256];
  MPI_Init(&argc, &argv);
  MPI_Gather(a, 4, MPI_DOUBLE, b, 4, MPI_DOUBLE, 2, MPI_COMM_WORLD);
  MPI_Scatter(a, 3, MPI_DOUBLE, b, 3, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  MPI_Allgather(a, 5, MPI_DOUBLE, b, 5, MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Alltoall(x, 6, MPI_INT, y, 6, MPI_INT, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
