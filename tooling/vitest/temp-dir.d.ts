/** A fresh folder `<os tmpdir>/<prefix>XXXXXX`, removed after the test file's last test. */
export declare function tempDir(prefix: string): string;
/** Removes the folders tempDir made so far (the setup file calls it in afterAll). */
export declare function removeTempDirs(): void;
