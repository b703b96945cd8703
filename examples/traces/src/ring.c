/* A token ring: blocking sends and receives, then one nonblocking shift. */
#include <mpi.h>
#include <smpi/smpi.h>

int main(int argc, char **argv) {
  int rank, n;
  char token[64] = {0};
  double x[4] = {1, 2, 3, 4}, y[4];
  MPI_Request rq[2];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  for (int round = 0; round < 2; round++) {
    smpi_execute_flops(1e5 * (rank + 1));
    if (rank == 0) {
      MPI_Send(token, 64, MPI_CHAR, 1, round, MPI_COMM_WORLD);
      MPI_Recv(token, 64, MPI_CHAR, n - 1, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(token, 64, MPI_CHAR, rank - 1, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(token, 64, MPI_CHAR, (rank + 1) % n, round, MPI_COMM_WORLD);
    }
  }
  MPI_Irecv(y, 4, MPI_DOUBLE, (rank + n - 1) % n, 9, MPI_COMM_WORLD, &rq[0]);
  MPI_Isend(x, 4, MPI_DOUBLE, (rank + 1) % n, 9, MPI_COMM_WORLD, &rq[1]);
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  MPI_Finalize();
  return 0;
}
