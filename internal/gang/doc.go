// Package gang says what a job's gang scheduler will do with it, as facts for
// the policies (input.gang, docs/policies.md): the PodGroup the Trainer builds
// (render.Gang), and for Volcano the queue the PodGroup goes to, its
// ancestors, and how the gang compares with each one's capability and what
// it has allocated now. Go computes the exact amounts; the gang-scheduling
// policy (policies/gang-scheduling) decides and words the denials.
//
// Volcano's own admission checks only that a PodGroup's queue exists, is Open
// and is a leaf; its scheduler enforces capability later, so a gang that
// can never fit its queue waits forever instead of being refused
// (volcano-sh/volcano#1331). These facts let mpiguard refuse it at submit.
package gang
