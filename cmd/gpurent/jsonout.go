package main

import (
	"github.com/gpurent/gpurent/internal/bench"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/store"
)

// The JSON documents of the ckpt commands and bench history (-o json),
// one type each so that their fields are named once, in snake_case
// (docs/json.md). A list with nothing in it is [], never null.

// ckptLsJSON is ckpt ls -o json.
type ckptLsJSON struct {
	Run         string    `json:"run"`
	Checkpoints []summary `json:"checkpoints"`
	Unreadable  []string  `json:"unreadable"`
	// Unauthenticated are the ids no key here signs; AuthChecked is false
	// where no key here could tell.
	Unauthenticated []string `json:"unauthenticated"`
	AuthChecked     bool     `json:"auth_checked"`
}

// ckptVerifyJSON is ckpt verify -o json.
type ckptVerifyJSON struct {
	Run      string          `json:"run"`
	Checked  int             `json:"checked"`
	Deep     bool            `json:"deep"`
	Problems []store.Problem `json:"problems"`
}

// ckptPruneDryJSON is ckpt prune --dry-run -o json.
type ckptPruneDryJSON struct {
	Run                    string   `json:"run"`
	DryRun                 bool     `json:"dry_run"`
	WouldDelete            []string `json:"would_delete"`
	LeftoverObjects        int      `json:"leftover_objects"`
	IncompleteUploads      int      `json:"incomplete_uploads"`
	WouldDeleteLogSessions []string `json:"would_delete_log_sessions"`
	UnauthenticatedLeft    []string `json:"unauthenticated_left"`
	UnreadableLeft         []string `json:"unreadable_left"`
}

// ckptPruneJSON is ckpt prune -o json.
type ckptPruneJSON struct {
	Run                      string   `json:"run"`
	Deleted                  []string `json:"deleted"`
	LeftoverObjectsRemoved   int      `json:"leftover_objects_removed"`
	IncompleteUploadsAborted int      `json:"incomplete_uploads_aborted"`
	DeletedLogSessions       []string `json:"deleted_log_sessions"`
	UnauthenticatedLeft      []string `json:"unauthenticated_left"`
	UnreadableLeft           []string `json:"unreadable_left"`
}

// ckptRunsJSON is ckpt runs -o json.
type ckptRunsJSON struct {
	Store string          `json:"store"`
	Runs  []render.RunRow `json:"runs"`
}

// ckptLogJSON is ckpt log --list -o json.
type ckptLogJSON struct {
	Store    string             `json:"store"`
	Run      string             `json:"run"`
	Sessions []store.LogSession `json:"sessions"`
}

// ckptRmJSON is ckpt rm -o json.
type ckptRmJSON struct {
	Run     string   `json:"run"`
	Deleted []string `json:"deleted"`
}

// benchHistoryJSON is bench history -o json.
type benchHistoryJSON struct {
	Path         string               `json:"path"`
	Runs         []bench.HistoryEntry `json:"runs"`
	SkippedLines int                  `json:"skipped_lines"`
}

// nonNil is s, or an empty list: JSON lists are never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
