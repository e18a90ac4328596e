// Package fsspace says how much room a file system has: what pull checks
// before a download, what bench reports of the data disk and /dev/shm, and
// what run looks at when a command starts failing (a full disk).
package fsspace
