package dataset

import "io"

// ReadFileInChunks reads as ReadFile does, for an import that hands the store the SAM logs n at a
// time: tests cross chunk boundaries with a few logs.
func ReadFileInChunks(r io.Reader, again io.ReaderAt, n int) (*File, error) {
	return readFile(r, again, func(rd *reader) { rd.f.chunk = n })
}

// SAMChunks is how many chunks the import will hand f's SAM logs to the store in.
func SAMChunks(f *File) int { return len(f.starts) }

// NewestFirst says whether the import will hand f's chunks of logs to the store last one first.
func NewestFirst(f *File) bool { return f.newestFirst }
