//go:build !unix

package store

// canFIFO: no FIFOs here.
const canFIFO = false
