/** One chat turn as chat templates read it. Extra fields (tool_calls, reasoning_content, name) pass through to the template. */
export interface ChatMessage {
  role: string;
  content: string;
  [extra: string]: unknown;
}
