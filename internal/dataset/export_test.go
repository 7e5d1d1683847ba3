package dataset

// SetSAMChunkLogs sets how many SAM logs the streaming import hands the store at a time, until the
// returned function puts it back: tests cross chunk boundaries with a few logs.
func SetSAMChunkLogs(n int) (restore func()) {
	before := samChunkLogs
	samChunkLogs = n
	return func() { samChunkLogs = before }
}

// NewestFirst says whether the import will hand f's chunks of logs to the store last one first.
func NewestFirst(f *File) bool { return f.newestFirst }
