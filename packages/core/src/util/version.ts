// The library version, reported in the startup event, logs and --version.
export const VERSION = '0.1.0';
