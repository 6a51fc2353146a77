//! Inputs the fuzz targets found that failed, kept as tests named after what went wrong.
