package listoffsets

import "github.com/IBM/sarama"

// Conn returns l's connection to broker id (nil: none).
func Conn(l *Lister, id int32) *sarama.Broker {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.brokers[id]
}
