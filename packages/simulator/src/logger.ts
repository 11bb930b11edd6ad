// The minimal logger interface the simulator writes to (winston and console both fit).
export interface SimulatorLogger {
  debug?(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}
