// Public face of the tensor engine (backend choice and fast kernels); curated list of exports.
export {};
