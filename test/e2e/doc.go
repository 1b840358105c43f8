// Package e2e tests the operator the way it is deployed. The manager and the node agent run as
// separate processes, built from the current source at the start of the run, each authenticated as
// its own ServiceAccount and limited to the roles generated into config/rbac. They work against a
// local control plane (test/localcluster) whose StatefulSet controller, scheduler and kwok nodes
// really roll pods out. Users are played with kubectl and the samples in config/samples.
//
// A permission missing from the generated roles makes the API server answer "forbidden"; the suite
// reads every log line of both processes and fails the test during which such a line appeared.
package e2e
