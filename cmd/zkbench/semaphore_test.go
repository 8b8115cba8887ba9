package main

import "testing"

func TestSemaphoreLabels(t *testing.T) {
	for _, tc := range []struct{ workload, want string }{
		{"SemaphoreUncontended", "Acquire + Release of a semaphore lease, uncontended"},
		{"SemaphoreHandoff/waiters=1", "semaphore lease handoff, 1 waiter"},
		{"SemaphoreHandoff/waiters=100", "semaphore lease handoff, 100 waiters"},
		{"SemaphoreHandoff", "SemaphoreHandoff"},
	} {
		if got := label(tc.workload); got != tc.want {
			t.Errorf("label(%q) = %q, want %q", tc.workload, got, tc.want)
		}
	}
}
