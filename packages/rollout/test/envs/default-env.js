export default {
  async step(state, action) {
    return [state + action + '|', action.length, action.length > 2];
  },
};
