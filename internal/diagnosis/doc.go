// Package diagnosis classifies what an MPI TrainJob's pods, Jobs and events
// show: which Launcher or Worker pod waits or failed, and why. It is pure: the
// callers observe the cluster (the RuntimeTest smoke test, the job follower,
// `mpiguard explain`), diagnosis decides, so every one of them gives the same
// reason for the same state.
package diagnosis
