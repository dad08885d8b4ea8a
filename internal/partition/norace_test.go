//go:build !race

package partition

// raceEnabled is true under the race detector, whose instrumentation
// makes frames larger (see TestIdleManagerCost).
const raceEnabled = false
