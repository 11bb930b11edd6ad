// Small helpers for building error messages from unknown thrown values.
import { errorText } from '../../util/values.js';

/** The message of an Error, or the value rendered as text (util/values.ts errorText). */
export const errorMessage = errorText;
