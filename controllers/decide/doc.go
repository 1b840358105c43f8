// Package decide is the ScratchVolume controller's decision layer. Given a ScratchVolume, the
// StatefulSets as read, what the controller remembers of its earlier writes and the clock, it
// decides each target's plan, which ScratchVolume claims a container, the write-war verdict, the
// Events a change asks for, and the status and conditions that report it all. It reads and writes
// nothing: package controllers does the I/O around it, and package fleetcache keeps what it
// remembers between reconciles. Its own decisions stand on the pure packages inject (what goes
// into a pod template) and mysql (what a server needs).
package decide
