// Package mpi proves the curated runtimes launch real MPI ranks over real SSH:
// its test renders a TrainJob with the Trainer's own code and runs every
// rendered pod as processes in its own network, mount and UTS namespaces on
// the test machine (root only; `make test` installs Debian's openssh-server,
// openmpi-bin and mpich). TestRanksOverSSH says what is real and what stands in
// for the container images.
package mpi
