//go:build race

package assign

// raceEnabled is true under the race detector, which slows the random
// property tests down about tenfold; they run fewer cases then.
const raceEnabled = true
