package main

// semaphoreLabel names the recipe.Semaphore workloads for people, as label
// does the others: name and param are the workload's name and parameter
// ("SemaphoreHandoff", "waiters=100"), value the parameter's value as the
// table prints it ("100"). ok is false for any other workload.
func semaphoreLabel(name, param, value string) (label string, ok bool) {
	switch {
	case name == "SemaphoreUncontended" && param == "":
		return "Acquire + Release of a semaphore lease, uncontended", true
	case name == "SemaphoreHandoff" && value != "":
		return "semaphore lease handoff, " + value + " waiter" + plural(value), true
	}
	return "", false
}
