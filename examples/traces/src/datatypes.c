/* One send per replayable datatype, tag = index in this list: the trace
 * shows the id SMPI writes for each (a parser test checks their sizes). */
#include <mpi.h>

int main(int argc, char **argv) {
  int rank;
  char buf[64] = {0};
  MPI_Datatype t[7] = {MPI_BYTE, MPI_DOUBLE, MPI_INT, MPI_CHAR, MPI_SHORT, MPI_LONG, MPI_FLOAT};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 7; i++) {
    if (rank == 0)
      MPI_Send(buf, 3, t[i], 1, i, MPI_COMM_WORLD);
    else
      MPI_Recv(buf, 3, t[i], 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
