package zkconn

// MonitorWakes is how many times s's monitor woke on its timer.
func MonitorWakes(s *Session) int64 { return s.wakes.Load() }
