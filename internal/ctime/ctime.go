// Package ctime reads a file's change time (ctime): when its inode last
// changed. Unlike the modification time, which tar, cp -p and rsync -t set
// back and any program may set, no call sets it, so it tells when a file
// was really written: audit and wipe date a tenancy's files by it, and a
// push sees a file rewritten under it.
package ctime
